import type { Db } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { checkOkmVisible, type OkmRequest } from '../okm/admin-service.ts';
import { findMessage } from '../okm/messages-repository.ts';
import { findPolledOkm, loadList, type PolledOkmSnapshot } from './poll-repository.ts';
import { dividingStateOf, stateFactsOf, summaryStateOf } from '../okm/fleet-states.ts';
import { effectivePollingInterval } from '../okm/model.ts';
import { FIRMWARE_KINDS, type FirmwareKind } from '../firmware/version.ts';
import { findRollout } from '../rollouts/repository.ts';
import { correctionRecordOf } from '../okm/correction-record.ts';
import { desiredState, effectiveReleases, pinsOf, type PollSettings } from './poll-service.ts';
import { findRolloutOffer, rolloutRetryPolicy, withRolloutOffer, type RolloutOffer } from '../rollouts/poll-offer.ts';
import { findRetryPolicies } from '../customers/repository.ts';
import { retryPolicyToWire, type RetryPolicy } from '../shared/retry-policy.ts';
import { decidePoll } from './poll-verdict.ts';
import { parseReported } from './reported.ts';
import { storedReportValues } from '../shared/reported-values.ts';
import { RESOLVERS } from './resolvers/index.ts';
import type { Correction, DesiredState } from './resolvers/types.ts';
import type { DriftReport, FirmwareOfferSource, ResolverVerdict } from './drift-schemas.ts';
import type { PollCorrections } from '../okm/admin-routes.ts';

/** The OKM as a poll reads it, and when its configuration last changed. */
interface Snapshot extends PolledOkmSnapshot {
  serial_number: string;
  updated_at: number;
}

/** A resolver's answer to the last reported values: null when it is in step. */
interface Answer {
  name: string;
  correction: Correction | null;
}

/** What the OKM's next poll would be compared with: its row as a poll reads it, at the time of its last poll; and the offers the retry policy holds back on that poll. */
async function desiredFor(
  db: Db,
  settings: PollSettings,
  row: Snapshot,
  now: number,
): Promise<{ desired: DesiredState; heldBack: ReadonlySet<string>; releases: EffectiveReleases; rollout: RolloutOffer | undefined }> {
  const [releases, rollout, message, customerPolicies] = await Promise.all([
    effectiveReleases(db, row),
    row.rollout_id === null ? undefined : findRolloutOffer(db, row.rollout_id, row.serial_number, now),
    row.pending_message_id === null ? undefined : findMessage(db, row.pending_message_id),
    row.offer_hold === null || row.customer_id === null ? new Map<number, RetryPolicy>() : findRetryPolicies(db, [row.customer_id]),
  ]);
  const pendingMessage = message ? { id: message.id, type: message.type, payload: message.payload } : null;
  const desired = desiredState(row, withRolloutOffer(releases, pinsOf(row), rollout), pendingMessage, settings, row.last_sync_time ?? now);
  if (row.offer_hold === null) return { desired, heldBack: new Set(), releases, rollout };
  // The poll's own decision, as the next poll would take it: one definition of what is held back.
  const { heldBack } = decidePoll({
    desired,
    reported: reportedOf(row),
    previous: correctionRecordOf(row),
    poll: row.polls + 1,
    now,
    policyFor: (resolver) => rolloutRetryPolicy(rollout, resolver) ?? (row.customer_id === null ? undefined : customerPolicies.get(row.customer_id)) ?? settings.firmwareRetryPolicy,
    stuckAfterPolls: settings.stuckAfterPolls,
  });
  return { desired, heldBack, releases, rollout };
}

type EffectiveReleases = Awaited<ReturnType<typeof effectiveReleases>>;

const FIRMWARE_RESOLVERS: Record<FirmwareKind, string> = { kas: 'kasFirmware', batch_key: 'batchKeyFirmware', wireless_key: 'wirelessKeyFirmware' };

/**
 * What stands behind each kind of firmware offer (the pin, the rollout, the fleet latest), the
 * retry policy in force for it and that policy's hold: the same inputs the poll's resolvers and
 * decidePoll take, read again here, off the poll's path, for the people reading the drift report.
 */
async function firmwareSources(
  db: Db,
  settings: PollSettings,
  row: Snapshot,
  { releases, rollout, heldBack }: { releases: EffectiveReleases; rollout: RolloutOffer | undefined; heldBack: ReadonlySet<string> },
): Promise<FirmwareOfferSource[]> {
  const [rolloutRow, customerPolicies] = await Promise.all([
    row.rollout_id === null ? undefined : findRollout(db, row.rollout_id),
    row.customer_id === null ? new Map<number, RetryPolicy>() : findRetryPolicies(db, [row.customer_id]),
  ]);
  const pins = pinsOf(row);
  const offered = withRolloutOffer(releases, pins, rollout);
  const record = correctionRecordOf(row);
  const intervalMs = effectivePollingInterval(row.polling_interval, settings.fleetPollingInterval) * 1000;
  return FIRMWARE_KINDS.map((kind) => {
    const resolver = FIRMWARE_RESOLVERS[kind];
    const release = offered[kind];
    const fromRollout = pins[kind] === null && rollout?.offering === true && rollout.kind === kind && release?.version === rollout.release.version;
    const own = rolloutRetryPolicy(rollout, resolver);
    const customer = row.customer_id === null ? undefined : customerPolicies.get(row.customer_id);
    const [policy, from] = own ? [own, 'rollout' as const] : customer ? [customer, 'customer' as const] : [settings.firmwareRetryPolicy, 'fleet' as const];
    const hold = record.holds.find((candidate) => candidate.resolver === resolver);
    const pollsUntil = hold === undefined ? 0 : Math.max(1, hold.resumeAtPoll - row.polls);
    return {
      resolver,
      kind,
      version: release?.version ?? null,
      source: pins[kind] !== null ? 'pin' : fromRollout ? 'rollout' : release ? 'fleet_latest' : 'none',
      pin: pins[kind],
      rollout:
        rolloutRow && rolloutRow.kind === kind
          ? { id: rolloutRow.id, state: rolloutRow.state, version: rolloutRow.version, offering: rollout?.offering === true }
          : null,
      retry_policy: { ...retryPolicyToWire(policy), from },
      hold:
        hold === undefined
          ? null
          : {
              rounds: hold.rounds,
              offered: hold.offered,
              held_back: heldBack.has(resolver),
              next_offer_poll: hold.resumeAtPoll,
              polls_until_offer: pollsUntil,
              next_offer_at: row.last_sync_time === null ? null : new Date(row.last_sync_time + pollsUntil * intervalMs).toISOString(),
            },
    };
  });
}

const reportedOf = (row: Snapshot) => parseReported(row.reported === null ? {} : storedReportValues(row.reported));

function answersOf(desired: DesiredState, row: Snapshot): Answer[] {
  const reported = reportedOf(row);
  return RESOLVERS.map(({ name, resolve }) => ({ name, correction: resolve(desired, reported) ?? null }));
}

/**
 * Each answer in view of the last poll. The resolvers judge the values the device reported
 * *before* that poll's answer, so the correction it was sent still shows as out of step until
 * the device reports again; it is taken as applied ("sent"), and the next poll is expected to
 * send the first other correction. Three exceptions make it due again: a buffered message, since
 * the one sent is delivered and any correction now is the next message; a configuration
 * changed after that poll, since what was sent may no longer be what is configured; and an
 * OKM stuck on it, which has shown on polls in a row that it does not take it.
 */
function verdictsOf(answers: Answer[], row: Snapshot, heldBack: ReadonlySet<string>): ResolverVerdict[] {
  const lastCorrection = row.last_sync_time === null ? null : row.last_correction;
  const changedSincePoll = row.last_sync_time !== null && row.updated_at > row.last_sync_time;
  let nextFound = false;
  return answers.map(({ name, correction }) => {
    const sentOnLastPoll = name === lastCorrection;
    let verdict: ResolverVerdict['verdict'] = 'in_step';
    if (correction !== null) {
      if (heldBack.has(name)) verdict = 'held_back';
      // A stuck OKM has shown that it does not take what it is sent: expected again, not taken as applied.
      else if (sentOnLastPoll && name !== 'message' && !changedSincePoll && name !== row.stuck_resolver) verdict = 'sent';
      else if (!nextFound) {
        verdict = 'next';
        nextFound = true;
      } else verdict = 'later';
    }
    return { name, in_step: correction === null, correction, verdict, sent_on_last_poll: sentOnLastPoll };
  });
}

const nextOf = (verdicts: ResolverVerdict[]) => verdicts.find((resolver) => resolver.verdict === 'next') ?? null;

async function snapshotOf(db: Db, serialNumber: string): Promise<Snapshot | undefined> {
  const [row, changed] = await Promise.all([
    findPolledOkm(db, serialNumber),
    db.selectFrom('okms').select('updated_at').where('serial_number', '=', serialNumber).executeTakeFirst(),
  ]);
  return row && changed && { ...row, serial_number: serialNumber, updated_at: Number(changed.updated_at) };
}

/**
 * Every resolver's verdict on the OKM's last reported values, as the poll judges them (same
 * desired state, same resolver functions), without recording anything: the pending message
 * stays pending. The device clock is judged as it was at the last poll, so a device that
 * was in step is not reported as drifting merely because time has passed. Beside it, what
 * the last poll sent and what the next poll is expected to send (verdictsOf).
 */
export async function driftReport(request: OkmRequest & { settings: PollSettings }, serialNumber: string): Promise<DriftReport> {
  await checkOkmVisible(request, serialNumber);
  const db: Db = request.db;
  const row = await snapshotOf(db, serialNumber);
  if (!row) throw notFound('OKM not found');
  const { desired: polled, heldBack, releases, rollout } = await desiredFor(db, request.settings, row, request.now);
  // The lists themselves, not the poll's placeholders: a report shows the items a correction sends.
  const [assetList, usersAssets] = await Promise.all([
    polled.assetList && loadList(db, serialNumber, 'asset_list'),
    polled.usersAssets && loadList(db, serialNumber, 'users_assets'),
  ]);
  const resolvers = verdictsOf(answersOf({ ...polled, assetList, usersAssets }, row), row, heldBack);
  const next: Correction | null = resolvers.find((verdict) => !verdict.in_step && verdict.verdict !== 'held_back')?.correction ?? null;
  const facts = stateFactsOf(row);
  return {
    serial_number: serialNumber,
    in_step: next === null,
    next,
    resolvers,
    last_poll_at: row.last_sync_time === null ? null : new Date(row.last_sync_time).toISOString(),
    last_correction: row.last_sync_time === null ? null : row.last_correction,
    state: dividingStateOf(facts),
    summary_state: summaryStateOf(facts),
    firmware: await firmwareSources(db, request.settings, row, { releases, rollout, heldBack }),
    expected_next: nextOf(resolvers)?.correction ?? null,
  };
}

/**
 * The reply key of the correction each OKM's next poll is expected to send (the drift report's
 * `expected_next`), for a page of the OKM list; null: none. The lists stay placeholders here:
 * their digests decide the verdict, and only the key is wanted.
 */
export async function expectedNextCorrections(db: Db, settings: PollSettings, serialNumbers: readonly string[], now: number): Promise<Map<string, string | null>> {
  const keys = await Promise.all(
    serialNumbers.map(async (serialNumber) => {
      const row = await snapshotOf(db, serialNumber);
      if (!row) return [];
      const { desired, heldBack } = await desiredFor(db, settings, row, now);
      const verdicts = verdictsOf(answersOf(desired, row), row, heldBack);
      return [[serialNumber, nextOf(verdicts)?.name ?? null] as const];
    }),
  );
  return new Map(keys.flat());
}

/** The poll's corrections as the OKM list shows them (src/app.ts hands them to the admin routes). */
export const pollCorrections: PollCorrections = {
  names: RESOLVERS.map((resolver) => resolver.name),
  expectedNext: expectedNextCorrections,
};
