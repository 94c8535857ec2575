import type { Settings } from '../config/settings.ts';
import { isFreeText } from '../http/schemas.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { createWriteBatcher } from '../db/write-batcher.ts';
import { downloadUrl, type FirmwareRelease } from '../firmware/repository.ts';
import { FIRMWARE_KINDS, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import { effectivePollingInterval, type CacheMode } from '../okm/model.ts';
import { keyCheckoutWindowOf } from '../okm/repository.ts';
import { PER_ROW_POLL_STATEMENTS, pollStatementsFor, type ObservedPoll, type PinnedRelease, type PollStatements } from './poll-batch-repository.ts';
import {
  NO_STATUS_URLS,
  emitStuckEvents,
  fleetLatestReleasesForPoll,
  loadList,
  reportsOtherVersions,
  type CountedPollRow,
  type PolledOkmRow,
  type PollObservation,
} from './poll-repository.ts';
import { findRolloutOffers, recordRolloutProgress, rolloutProgress, rolloutRetryPolicy, withRolloutOffer, type RolloutOffer } from '../rollouts/poll-offer.ts';
import { findRetryPolicies } from '../customers/repository.ts';
import type { RetryPolicy } from '../shared/retry-policy.ts';
import { decidePoll, type PollContext, type PollVerdict } from './poll-verdict.ts';
import { correctionRecordOf } from '../okm/correction-record.ts';
import { FIRMWARE_VERSION_MAX_LENGTH, parseReported, type ReportedState } from './reported.ts';
import { storedReport } from '../shared/reported-values.ts';
import { resolve } from './resolvers/index.ts';
import { StoredList, type Correction, type DesiredState, type FirmwareOffer, type PendingMessage } from './resolvers/types.ts';

export type PollSettings = Pick<Settings, 'auditUrl' | 'fleetPollingInterval' | 'publicBaseUrl' | 'okmAutoEnrol' | 'firmwareRetryPolicy' | 'stuckAfterPolls'>;

export interface PollRequest {
  serialNumber: string;
  ip: string;
  /** The parsed query string: string values, arrays for repeated parameters. */
  query: Record<string, unknown>;
  /** The query as sent, as stored (reportedQueryOf): parsed, it is `query`. */
  reportedQuery: string;
  now: number;
}

/**
 * 204 for an OKM seen for the first time; pending for an unknown one while auto-enrol is off;
 * otherwise one correction, or {} when nothing differs.
 */
export type PollReply = { kind: 'enrolled' } | { kind: 'pending' } | { kind: 'answered'; body: Correction };

// A device may send anything; what cannot be stored as text (a NUL, say) is recorded as unknown.
const storableVersion = (version: string | undefined) =>
  version !== undefined && isFreeText(version) ? version.slice(0, FIRMWARE_VERSION_MAX_LENGTH) : null;

function observe(request: PollRequest, { kasFirmware, batchKeyFirmware, wirelessKeyFirmware, installCode }: ReportedState): PollObservation {
  return {
    now: request.now,
    ip: request.ip,
    firmwareVersion: storableVersion(kasFirmware),
    batchKeyFirmwareVersion: storableVersion(batchKeyFirmware),
    wirelessKeyFirmwareVersion: storableVersion(wirelessKeyFirmware),
    reported: storedReport(request.reportedQuery, request.query),
    installCode: installCode ?? null,
  };
}

/** Records each poll on its OKM (undefined: unknown), and the reported versions of those that report other ones than stored. */
async function recordPollsOfKnownOkms(db: Db, statements: PollStatements, polls: readonly ObservedPoll[]): Promise<(CountedPollRow | undefined)[]> {
  const rows = await statements.recordPolls(db, polls);
  await statements.recordReportedVersions(
    db,
    polls.filter((poll, index) => rows[index] !== undefined && reportsOtherVersions(rows[index], poll.observation)),
  );
  return rows;
}

/**
 * The recording step: writes each poll on its OKM, inserting an unknown one (or, with
 * auto-enrol off, recording it as pending). It only takes a Db, so it can run inside a
 * transaction together with whatever must commit with it.
 */
async function recordCalls(
  db: Db,
  statements: PollStatements,
  polls: readonly ObservedPoll[],
  autoEnrol: boolean,
): Promise<(CountedPollRow | 'enrolled' | 'pending')[]> {
  const rows: (CountedPollRow | 'enrolled' | 'pending' | undefined)[] = await recordPollsOfKnownOkms(db, statements, polls);
  const unknown = indexesWhere(rows, (row) => row === undefined);
  const unknownPolls = unknown.map((index) => polls[index]!);
  if (!autoEnrol) {
    await statements.recordPendingCalls(db, unknownPolls);
    for (const index of unknown) rows[index] = 'pending';
    return rows as (CountedPollRow | 'pending')[];
  }
  const inserted = await statements.enrolOkms(db, unknownPolls);
  // A concurrent first poll inserted it in between: this one is an ordinary poll.
  const raced = unknown.filter((_, position) => !inserted[position]);
  const racedRows = await recordPollsOfKnownOkms(
    db,
    statements,
    raced.map((index) => polls[index]!),
  );
  for (const index of unknown) rows[index] = 'enrolled';
  raced.forEach((index, position) => (rows[index] = racedRows[position] ?? 'enrolled'));
  return rows as (CountedPollRow | 'enrolled')[];
}

/**
 * What `pick` gives for each item, in order, leaving out undefined: a batch's lists, most of
 * them empty for steady polls (those that end a silence, change a record, join a rollout). A
 * loop, not flatMap, which made an array for every poll of every batch, several times a poll.
 */
function collect<T, Out>(items: readonly T[], pick: (item: T, index: number) => Out | undefined): Out[] {
  const collected: Out[] = [];
  for (let index = 0; index < items.length; index++) {
    const picked = pick(items[index]!, index);
    if (picked !== undefined) collected.push(picked);
  }
  return collected;
}

const indexesWhere = <T>(items: readonly T[], test: (item: T, index: number) => boolean) => collect(items, (item, index) => (test(item, index) ? index : undefined));

/** A poll to decide (decidePoll), with what chooses its retry policy. */
interface PollToDecide extends Omit<PollContext, 'policyFor' | 'stuckAfterPolls'> {
  customerId: number | null;
  rollout: RolloutOffer | undefined;
}

/**
 * Decides a round's polls, each with the retry policy of its offers: the rollout's own, else
 * its customer's, else the fleet's. A customer's is read only when a decision asks for it (an
 * offer made or held back), once for the round: most polls read nothing more.
 */
function retryPolicies(db: Db, settings: PollSettings) {
  const known = new Map<number, RetryPolicy | null>();
  return async (polls: readonly PollToDecide[]): Promise<PollVerdict[]> => {
    const asked = new Set<number>();
    const decideAll = () =>
      // The context's fields named: copying the rest of an object's properties cost more than deciding a steady poll.
      polls.map(({ customerId, rollout, desired, reported, previous, poll, now }) =>
        decidePoll({
          desired,
          reported,
          previous,
          poll,
          now,
          stuckAfterPolls: settings.stuckAfterPolls,
          policyFor: (resolver) => {
            const own = rolloutRetryPolicy(rollout, resolver);
            if (own) return own;
            if (customerId === null) return settings.firmwareRetryPolicy;
            if (!known.has(customerId)) asked.add(customerId);
            return known.get(customerId) ?? settings.firmwareRetryPolicy;
          },
        }),
      );
    const verdicts = decideAll();
    if (asked.size === 0) return verdicts;
    const policies = await findRetryPolicies(db, [...asked]);
    for (const customerId of asked) known.set(customerId, policies.get(customerId) ?? null);
    return decideAll();
  };
}

type EffectiveReleases = Partial<Record<FirmwareKind, FirmwareRelease>>;

/** The OKM's own firmware pins, by kind. */
export const pinsOf = (row: PolledOkmRow): Record<FirmwareKind, string | null> => ({
  kas: row.kas_firmware,
  batch_key: row.batch_key_firmware,
  wireless_key: row.wireless_key_firmware,
});

/**
 * Effective releases of each OKM, of each kind: the OKM's pin (none if the pin is not in the
 * catalog), else the fleet latest, read by `fleet` (once per transaction).
 */
async function effectiveReleasesOf(
  db: Db,
  statements: PollStatements,
  rows: readonly PolledOkmRow[],
  fleet: () => Promise<EffectiveReleases>,
): Promise<EffectiveReleases[]> {
  const pinnedOf = (row: PolledOkmRow) => {
    const pins = pinsOf(row);
    return collect(FIRMWARE_KINDS, (kind) => (pins[kind] === null ? undefined : { kind, version: pins[kind] }));
  };
  const pinKey = (pin: PinnedRelease) => `${pin.kind}\n${pin.version}`;
  const rowPins = rows.map(pinnedOf);
  const pins = [...new Map(rowPins.flat().map((pin) => [pinKey(pin), pin])).values()];
  const [fleetReleases, pinnedReleases] = await Promise.all([
    rowPins.every((pinned) => pinned.length === FIRMWARE_KINDS.length) ? {} : fleet(),
    statements.findReleases(db, pins),
  ]);
  const pinned = new Map(pins.map((pin, index) => [pinKey(pin), pinnedReleases[index]]));
  return rowPins.map((pinnedKinds) => {
    const releases: EffectiveReleases = { ...fleetReleases };
    for (const pin of pinnedKinds) releases[pin.kind] = pinned.get(pinKey(pin));
    return releases;
  });
}

/** The effective release of each kind for one OKM (see effectiveReleasesOf). */
export async function effectiveReleases(db: Db, row: PolledOkmRow): Promise<EffectiveReleases> {
  return (await effectiveReleasesOf(db, PER_ROW_POLL_STATEMENTS, [row], () => fleetLatestReleasesForPoll(db)))[0]!;
}

function offer(release: FirmwareRelease | undefined, settings: PollSettings): FirmwareOffer | null {
  const parts = parseFirmwareVersion(release?.version);
  if (!release || !parts) return null;
  return { version: release.version, parts, url: downloadUrl(release, settings), sha256: release.sha256 };
}

export function desiredState(
  row: PolledOkmRow,
  releases: Partial<Record<FirmwareKind, FirmwareRelease>>,
  pendingMessage: PendingMessage | null,
  settings: PollSettings,
  serverTime: number,
): DesiredState {
  return {
    serverTime,
    pendingMessage,
    firmware: {
      kas: offer(releases.kas, settings),
      batch_key: offer(releases.batch_key, settings),
      wireless_key: offer(releases.wireless_key, settings),
    },
    cacheMode: row.cache_mode as CacheMode | null,
    keyCheckoutWindow: keyCheckoutWindowOf(row),
    auditingEnabled: row.auditing_enabled === 1,
    assetList: row.asset_list_digest === null ? null : { digest: row.asset_list_digest, items: new StoredList('asset_list') },
    usersAssets: row.users_assets_digest === null ? null : { digest: row.users_assets_digest, items: new StoredList('users_assets') },
    auditUrl: settings.auditUrl,
    pollingInterval: effectivePollingInterval(row.polling_interval, settings.fleetPollingInterval),
  };
}

/**
 * Swaps a StoredList in the correction for the list as stored now, read with its digest, and
 * resolves again: the reply's items and digest come from one read, and a list removed since
 * the poll's first read lets the next resolver answer.
 */
async function withStoredLists(db: Db, serialNumber: string, desired: DesiredState, reported: ReportedState, correction: Correction, heldBack: ReadonlySet<string>) {
  let current = desired;
  let answer: Correction = correction;
  for (let stored = storedListIn(answer); stored; stored = storedListIn(answer)) {
    const list = await loadList(db, serialNumber, stored.column);
    current = { ...current, [stored.column === 'asset_list' ? 'assetList' : 'usersAssets']: list };
    answer = resolve(current, reported, heldBack) ?? {};
  }
  return answer;
}

const storedListIn = (correction: Correction) => Object.values(correction).find((value) => value instanceof StoredList);

/** What a poll decided inside its transaction; the reply is built from it after the commit. */
type Decision =
  | { kind: 'enrolled' }
  | { kind: 'pending' }
  | { kind: 'answered'; desired: DesiredState; reported: ReportedState; answer: Correction; heldBack: ReadonlySet<string>; statusEventsQueued: number };

/** How many subscribers the poll's status was queued for: recordPoll marked the OKM's poll row (contract §6). */
function statusEventsQueuedBy(row: PolledOkmRow): number {
  return row.status_urls === NO_STATUS_URLS ? 0 : (JSON.parse(row.status_urls) as string[]).length;
}

/** The polls of a batch in rounds of distinct serial numbers, each poll of an OKM in a later round than its previous one. */
function roundsOfDistinctSerials(requests: readonly PollRequest[]): number[][] {
  const rounds: number[][] = [];
  const seen = new Map<string, number>();
  requests.forEach((request, index) => {
    const round = seen.get(request.serialNumber) ?? 0;
    seen.set(request.serialNumber, round + 1);
    (rounds[round] ??= []).push(index);
  });
  return rounds;
}

/**
 * The part of a batch of polls that writes, run inside the batch's transaction: record them,
 * decide each correction, claim the pending messages they send and record which resolver
 * answered. Each step is one call of the dialect's poll statements for the whole round; an
 * OKM polled twice in a batch has its second poll in the next round, as if polled after.
 */
async function decideBatch(db: Db, statements: PollStatements, settings: PollSettings, requests: readonly PollRequest[]): Promise<Decision[]> {
  const decisions: Decision[] = [];
  let fleet: Promise<EffectiveReleases> | undefined;
  const fleetOnce = () => (fleet ??= fleetLatestReleasesForPoll(db));
  for (const round of roundsOfDistinctSerials(requests)) {
    const polls = round.map((index) => {
      const request = requests[index]!;
      const reported = parseReported(request.query);
      return { index, request, reported, serialNumber: request.serialNumber, observation: observe(request, reported) };
    });
    const rows = await recordCalls(db, statements, polls, settings.okmAutoEnrol);
    const known = collect(polls, (poll, position) => {
      const row = rows[position]!;
      if (row === 'enrolled' || row === 'pending') {
        decisions[poll.index] = { kind: row };
        return undefined;
      }
      return { ...poll, row };
    });
    // Rare, like a changed correction: the poll ends a silence the fleet pass recorded, or is an OKM's first.
    await statements.recordEndsOfSilence(
      db,
      collect(known, ({ serialNumber, row, request }) => (row.overdue_at === null ? undefined : { serialNumber, previousOverdueAt: row.overdue_at, now: request.now, ip: request.ip })),
    );

    const withMessage = known.filter(({ row }) => row.pending_message_id !== null);
    const [releases, messages, rollouts] = await Promise.all([
      effectiveReleasesOf(
        db,
        statements,
        known.map(({ row }) => row),
        fleetOnce,
      ),
      statements.findMessages(
        db,
        withMessage.map(({ row }) => row.pending_message_id!),
      ),
      // Only OKMs of an active rollout read it (one read by primary keys for all); the rest of the fleet reads nothing more.
      findRolloutOffers(
        db,
        collect(known, ({ row, serialNumber, request }) => (row.rollout_id === null ? undefined : { rolloutId: row.rollout_id, serialNumber, now: request.now })),
      ),
    ]);
    const pendingMessages = new Map(withMessage.map(({ row }, position) => [row.pending_message_id!, messages[position] ?? null]));
    const decide = retryPolicies(db, settings);
    const decideEach = (desires: readonly DesiredState[]) =>
      decide(
        known.map(({ row, reported, request, serialNumber }, position) => ({
          desired: desires[position]!,
          reported,
          previous: correctionRecordOf(row),
          poll: row.polls,
          now: request.now,
          customerId: row.customer_id,
          rollout: rollouts.get(serialNumber),
        })),
      );
    const desires = known.map(({ request, row, serialNumber }, position) => {
      const pendingMessage = row.pending_message_id === null ? null : (pendingMessages.get(row.pending_message_id) ?? null);
      return desiredState(row, withRolloutOffer(releases[position]!, pinsOf(row), rollouts.get(serialNumber)), pendingMessage, settings, request.now);
    });
    let verdicts = await decideEach(desires);

    // Two polls at once may both have picked the message; only the one that claims it sends it.
    const sending = indexesWhere(verdicts, ({ answer }, position) => desires[position]!.pendingMessage !== null && 'message' in answer);
    const claimed = await statements.claimMessages(
      db,
      sending.map((position) => ({ id: desires[position]!.pendingMessage!.id, now: known[position]!.request.now })),
    );
    const unclaimed = sending.filter((_, claim) => !claimed[claim]);
    if (unclaimed.length > 0) {
      for (const position of unclaimed) desires[position] = { ...desires[position]!, pendingMessage: null };
      verdicts = await decideEach(desires);
    }

    await statements.recordCorrections(
      db,
      collect(known, ({ serialNumber }, position) => (verdicts[position]!.changed ? { serialNumber, record: verdicts[position]!.record } : undefined)),
    );
    await emitStuckEvents(
      db,
      collect(known, ({ serialNumber, row, request }, position) => {
        const { events } = verdicts[position]!;
        return events.length === 0 ? undefined : { serialNumber, customerId: row.customer_id, events, now: request.now };
      }),
    );
    await recordRolloutProgress(
      db,
      collect(known, ({ serialNumber, reported, request }, position) => {
        const rollout = rollouts.get(serialNumber);
        const progress = rollout && rolloutProgress(rollout, reported, verdicts[position]!.answer);
        return progress ? { serialNumber, rolloutId: rollout.rolloutId, progress, now: request.now } : undefined;
      }),
    );
    known.forEach(({ index, reported, row }, position) => {
      const { answer, heldBack } = verdicts[position]!;
      decisions[index] = { kind: 'answered', desired: desires[position]!, answer, heldBack, reported, statusEventsQueued: statusEventsQueuedBy(row) };
    });
  }
  return decisions;
}

/**
 * The config call handler: records each poll and queues its status events (grouped into
 * transactions as the dialect's write grouping says) and, once that has committed, answers
 * with the first resolver's correction. A poll that was answered is never lost, nor are its
 * events; their delivery is the dispatcher's, never awaited here.
 */
export function createPollHandler(
  db: Db,
  settings: PollSettings,
  dialect: Pick<DialectStrategy, 'writeGrouping' | 'rowSet' | 'lockRowsInOrder'>,
  onStatusEventsQueued: (count: number) => void,
): (request: PollRequest) => Promise<PollReply> {
  const statements = pollStatementsFor(dialect);
  const record = createWriteBatcher(
    db,
    dialect.writeGrouping,
    (tx, requests: readonly PollRequest[]) => decideBatch(tx, statements, settings, requests),
    (request) => request.serialNumber,
  );
  return async (request) => {
    const decision = await record(request);
    if (decision.kind !== 'answered') return decision;
    const { desired, reported, answer, heldBack, statusEventsQueued } = decision;
    if (statusEventsQueued > 0) onStatusEventsQueued(statusEventsQueued);
    // Most answers name no stored list: they are sent without another step.
    const body = storedListIn(answer) ? await withStoredLists(db, request.serialNumber, desired, reported, answer, heldBack) : answer;
    return { kind: 'answered', body };
  };
}
