import { Type, type Static } from 'typebox';
import { IsoTime, Nullable } from '../http/schemas.ts';
import { OkmState, OkmSummaryState } from '../okm/schemas.ts';

const CorrectionBody = Type.Record(Type.String(), Type.Unknown(), { description: 'a config reply body, keyed by the device parameters it sets' });

export const ResolverVerdict = Type.Object({
  name: Type.String({ description: "the resolver's reply key, as in last_correction (message, kasFirmware, kasDateTime, …)" }),
  in_step: Type.Boolean(),
  correction: Nullable(CorrectionBody),
  verdict: Type.Enum(['in_step', 'sent', 'next', 'later', 'held_back'], {
    description:
      'in_step: no correction; sent: its correction is the one the last poll sent, taken as applied until the device reports again; next: the correction the next poll is expected to send; later: a correction after that one; held_back: a firmware offer the OKM did not take, which the retry policy holds back on the next poll (contract §15)',
  }),
  sent_on_last_poll: Type.Boolean({ description: "its correction is the one the last poll sent (last_correction)" }),
});
export type ResolverVerdict = Static<typeof ResolverVerdict>;

const FIRMWARE_SOURCES = ['pin', 'rollout', 'fleet_latest', 'none'] as const;
export type FirmwareSource = (typeof FIRMWARE_SOURCES)[number];

/** What stands behind one kind of firmware offer, and the retry policy that spaces it (contract §13, §15). */
export const FirmwareOfferSource = Type.Object({
  resolver: Type.String({ description: 'the reply key: kasFirmware, batchKeyFirmware or wirelessKeyFirmware' }),
  kind: Type.String({ description: 'kas, batch_key or wireless_key' }),
  version: Nullable(Type.String({ description: 'the version the OKM is offered until it reports it or newer; null: none (no release of the kind, or a pin not in the catalog)' })),
  source: Type.Enum([...FIRMWARE_SOURCES], {
    description: "pin: the OKM's own pin; rollout: the rollout named in `rollout`, which offers its version to the OKM's group; fleet_latest: the fleet's latest release; none: nothing to offer",
  }),
  pin: Nullable(Type.String({ description: "the OKM's own pin of the kind, which wins over any rollout" })),
  rollout: Nullable(
    Type.Object({
      id: Type.Integer(),
      state: Type.String({ description: 'the rollout’s state (a finished rollout still offers its version to the OKMs it has not updated)' }),
      version: Type.String(),
      offering: Type.Boolean({ description: 'it offers its version to this OKM now (running or finished, the OKM’s group started, inside its maintenance window)' }),
    }, { description: 'the unfinished or finished rollout the OKM is in for this kind; null: none' }),
  ),
  retry_policy: Type.Object({
    offers: Type.Integer(),
    backoff_polls: Type.Array(Type.Integer()),
    max_backoff_polls: Type.Integer(),
    from: Type.Enum(['rollout', 'customer', 'fleet'], { description: 'whose policy it is: the rollout’s own, the customer’s, else the fleet default (FIRMWARE_RETRY_POLICY)' }),
  }, { description: 'the retry policy in force for this offer (contract §15)' }),
  hold: Nullable(
    Type.Object({
      rounds: Type.Integer({ description: 'rounds of offers the OKM did not take so far' }),
      offered: Type.Integer({ description: 'polls answered with the offer so far' }),
      held_back: Type.Boolean({ description: 'the next poll is not sent the offer' }),
      next_offer_poll: Type.Integer({ description: 'the number of the poll (counting every poll of the OKM) from which the offer is made again' }),
      polls_until_offer: Type.Integer({ description: 'polls from the last one until that poll; 1: the next poll' }),
      next_offer_at: Nullable({ ...IsoTime, description: 'when that poll is due, at the OKM’s effective polling interval after its last poll; null: never polled' }),
    }, { description: 'the retry policy’s state of this offer; null: no round of it has ended untaken' }),
  ),
});
export type FirmwareOfferSource = Static<typeof FirmwareOfferSource>;

/** GET /api/v1/okms/{serial}/drift (contract §11). */
export const DriftReport = Type.Object({
  serial_number: Type.String({ description: 'the OKM the report is about' }),
  in_step: Type.Boolean({ description: 'no resolver would correct the device' }),
  next: Nullable({ ...CorrectionBody, description: 'the body the next poll would get from the reported values (offers the retry policy holds back passed over); null: {}' }),
  resolvers: Type.Array(ResolverVerdict, { description: "every resolver's verdict, in seed order (contract §0.4)" }),
  last_poll_at: Nullable({ ...IsoTime, description: 'when the OKM last polled (its last_sync_time); null: never' }),
  last_correction: Nullable(
    Type.String({ description: "the reply key of the correction the last poll sent, as the OKM's last_correction; null: it was answered {}, or never polled" }),
  ),
  state: OkmState,
  summary_state: OkmSummaryState,
  firmware: Type.Array(FirmwareOfferSource, { description: 'for each kind of firmware, in the resolvers’ order: what the OKM is offered, by whom, and the retry policy that spaces the offer' }),
  expected_next: Nullable({
    ...CorrectionBody,
    description:
      'the body the next poll is expected to send: that of the resolver whose verdict is next; null: {}. Unlike next, it takes the correction the last poll sent as applied',
  }),
});
export type DriftReport = Static<typeof DriftReport>;
