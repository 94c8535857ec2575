import { Type, type Static } from 'typebox';
import { IsoTime, Nullable } from '../http/schemas.ts';
import { OkmState } from '../okm/schemas.ts';

const CorrectionBody = Type.Record(Type.String(), Type.Unknown(), { description: 'a config reply body, keyed by the device parameters it sets' });

export const ResolverVerdict = Type.Object({
  name: Type.String({ description: "the resolver's reply key, as in last_correction (message, kasFirmware, kasDateTime, …)" }),
  in_step: Type.Boolean(),
  correction: Nullable(CorrectionBody),
  verdict: Type.Enum(['in_step', 'sent', 'next', 'later', 'held_back'], {
    description:
      'in_step: no correction; sent: its correction is the one the last poll sent, taken as applied until the device reports again; next: the correction the next poll is expected to send; later: a correction after that one; held_back: a firmware offer the OKM did not take, which the retry policy holds back on the next poll (SPEC section 15)',
  }),
  sent_on_last_poll: Type.Boolean({ description: "its correction is the one the last poll sent (last_correction)" }),
});
export type ResolverVerdict = Static<typeof ResolverVerdict>;

/** GET /api/v1/okms/{serial}/drift (SPEC section 11). */
export const DriftReport = Type.Object({
  serial_number: Type.String({ description: 'the OKM the report is about' }),
  in_step: Type.Boolean({ description: 'no resolver would correct the device' }),
  next: Nullable({ ...CorrectionBody, description: 'the body the next poll would get from the reported values (offers the retry policy holds back passed over); null: {}' }),
  resolvers: Type.Array(ResolverVerdict, { description: "every resolver's verdict, in the seed's order" }),
  last_poll_at: Nullable({ ...IsoTime, description: 'when the OKM last polled (its last_sync_time); null: never' }),
  last_correction: Nullable(
    Type.String({ description: "the reply key of the correction the last poll sent, as the OKM's last_correction; null: it was answered {}, or never polled" }),
  ),
  state: OkmState,
  expected_next: Nullable({
    ...CorrectionBody,
    description:
      'the body the next poll is expected to send: that of the resolver whose verdict is next; null: {}. Unlike next, it takes the correction the last poll sent as applied',
  }),
});
export type DriftReport = Static<typeof DriftReport>;
