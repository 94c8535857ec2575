import type { Db } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { checkOkmVisible, type OkmRequest } from '../okm/admin-service.ts';
import { findMessage } from '../okm/messages-repository.ts';
import { findPolledOkm, loadList, type PolledOkmSnapshot } from './poll-repository.ts';
import { dividingStateOf, stateFactsOf } from '../okm/fleet-states.ts';
import { correctionRecordOf } from '../okm/correction-record.ts';
import { desiredState, effectiveReleases, pinsOf, type PollSettings } from './poll-service.ts';
import { findRolloutOffer, rolloutRetryPolicy, withRolloutOffer } from '../rollouts/poll-offer.ts';
import { findRetryPolicies } from '../customers/repository.ts';
import type { RetryPolicy } from '../shared/retry-policy.ts';
import { decidePoll } from './poll-verdict.ts';
import { parseReported } from './reported.ts';
import { RESOLVERS } from './resolvers/index.ts';
import type { Correction, DesiredState } from './resolvers/types.ts';
import type { DriftReport, ResolverVerdict } from './drift-schemas.ts';
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
async function desiredFor(db: Db, settings: PollSettings, row: Snapshot, now: number): Promise<{ desired: DesiredState; heldBack: ReadonlySet<string> }> {
  const [releases, rollout, message, customerPolicies] = await Promise.all([
    effectiveReleases(db, row),
    row.rollout_id === null ? undefined : findRolloutOffer(db, row.rollout_id, row.serial_number, now),
    row.pending_message_id === null ? undefined : findMessage(db, row.pending_message_id),
    row.offer_hold === null || row.customer_id === null ? new Map<number, RetryPolicy>() : findRetryPolicies(db, [row.customer_id]),
  ]);
  const pendingMessage = message ? { id: message.id, type: message.type, payload: message.payload } : null;
  const desired = desiredState(row, withRolloutOffer(releases, pinsOf(row), rollout), pendingMessage, settings, row.last_sync_time ?? now);
  if (row.offer_hold === null) return { desired, heldBack: new Set() };
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
  return { desired, heldBack };
}

const reportedOf = (row: Snapshot) => parseReported(row.reported === null ? {} : (JSON.parse(row.reported) as Record<string, unknown>));

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
  const { desired: polled, heldBack } = await desiredFor(db, request.settings, row, request.now);
  // The lists themselves, not the poll's placeholders: a report shows the items a correction sends.
  const [assetList, usersAssets] = await Promise.all([
    polled.assetList && loadList(db, serialNumber, 'asset_list'),
    polled.usersAssets && loadList(db, serialNumber, 'users_assets'),
  ]);
  const resolvers = verdictsOf(answersOf({ ...polled, assetList, usersAssets }, row), row, heldBack);
  const next: Correction | null = resolvers.find((verdict) => !verdict.in_step && verdict.verdict !== 'held_back')?.correction ?? null;
  return {
    serial_number: serialNumber,
    in_step: next === null,
    next,
    resolvers,
    last_poll_at: row.last_sync_time === null ? null : new Date(row.last_sync_time).toISOString(),
    last_correction: row.last_sync_time === null ? null : row.last_correction,
    state: dividingStateOf(stateFactsOf(row)),
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
