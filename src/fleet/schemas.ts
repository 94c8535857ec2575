import { Type, type Static } from 'typebox';

const VersionCounts = Type.Array(Type.Object({ version: Type.String(), okms: Type.Integer() }), {
  description: 'OKMs by the version they last reported, newest first',
});

/** GET /api/v1/fleet/summary (contract §11). */
export const FleetSummary = Type.Object({
  okms: Type.Object({
    total: Type.Integer(),
    in_step: Type.Integer({ description: 'polled, and the last poll was answered {} (last_correction null)' }),
    drifting: Type.Integer({ description: 'the last poll was answered with a correction (last_correction set)' }),
    overdue: Type.Integer({ description: 'polled before, but not for 3 × the effective polling interval (in step or drifting)' }),
    never_polled: Type.Integer({ description: 'never polled: neither in step nor drifting' }),
    stuck: Type.Integer({ description: 'sent the same correction on 3 polls in a row without effect (most are drifting), as the last fleet pass counted them' }),
  }),
  pending: Type.Optional(Type.Integer({ description: 'admin tokens only: OKMs waiting to be accepted' })),
  corrections: Type.Record(Type.String(), Type.Integer(), { description: 'drifting OKMs by the reply key of their last correction' }),
  firmware: Type.Object({ kas: VersionCounts, batch_key: VersionCounts, wireless_key: VersionCounts }),
});
export type FleetSummary = Static<typeof FleetSummary>;
