import type { Settings } from '../config/settings.ts';
import { FREE_TEXT_PATTERN } from '../http/schemas.ts';
import type { Db } from '../db/database.ts';
import { createWriteBatcher, type BatchScope, type WriteGrouping } from '../db/write-batcher.ts';
import { downloadUrl, findRelease, type FirmwareRelease } from '../firmware/repository.ts';
import { FIRMWARE_KINDS, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import { findMessage, markMessageDelivered } from './messages-repository.ts';
import type { CacheMode } from './model.ts';
import { keyCheckoutWindowOf } from './repository.ts';
import { recordPendingCall } from './pending-repository.ts';
import {
  NO_STATUS_URLS,
  enrolOkm,
  fleetLatestReleasesForPoll,
  loadList,
  recordCorrection,
  recordPoll,
  type PolledOkmRow,
  type PollObservation,
} from './poll-repository.ts';
import { findRolloutOffer, recordRolloutProgress, rolloutProgress, withRolloutOffer } from '../rollouts/poll-offer.ts';
import { FIRMWARE_VERSION_MAX_LENGTH, parseReported, reportedValues, type ReportedState } from './reported.ts';
import { correctionKey, resolve } from './resolvers/index.ts';
import { StoredList, type Correction, type DesiredState, type FirmwareOffer, type PendingMessage } from './resolvers/types.ts';

// A device may send anything; what cannot be stored as text (a NUL, say) is recorded as unknown.
const STORABLE_TEXT = new RegExp(FREE_TEXT_PATTERN, 'u');

export type PollSettings = Pick<Settings, 'auditUrl' | 'fleetPollingInterval' | 'publicBaseUrl' | 'okmAutoEnrol'>;

export interface PollRequest {
  serialNumber: string;
  ip: string;
  /** The parsed query string: string values, arrays for repeated parameters. */
  query: Record<string, unknown>;
  now: number;
}

/**
 * 204 for an OKM seen for the first time; pending for an unknown one while auto-enrol is off;
 * otherwise one correction, or {} when nothing differs.
 */
export type PollReply = { kind: 'enrolled' } | { kind: 'pending' } | { kind: 'answered'; body: Correction };

const storableVersion = (version: string | undefined) =>
  version !== undefined && STORABLE_TEXT.test(version) ? version.slice(0, FIRMWARE_VERSION_MAX_LENGTH) : null;

function observe(request: PollRequest, { kasFirmware, batchKeyFirmware, wirelessKeyFirmware, installCode }: ReportedState): PollObservation {
  return {
    now: request.now,
    ip: request.ip,
    firmwareVersion: storableVersion(kasFirmware),
    batchKeyFirmwareVersion: storableVersion(batchKeyFirmware),
    wirelessKeyFirmwareVersion: storableVersion(wirelessKeyFirmware),
    reported: JSON.stringify(reportedValues(request.query)),
    installCode: installCode ?? null,
  };
}

/**
 * The recording step: writes the poll on the OKM, inserting an unknown one (or, with
 * auto-enrol off, recording it as pending). It only takes a Db, so it can run inside a
 * transaction together with whatever must commit with it.
 */
async function recordCall(
  db: Db,
  serialNumber: string,
  observation: PollObservation,
  autoEnrol: boolean,
): Promise<PolledOkmRow | 'enrolled' | 'pending'> {
  const row = await recordPoll(db, serialNumber, observation);
  if (row) return row;
  if (!autoEnrol) {
    await recordPendingCall(db, serialNumber, observation);
    return 'pending';
  }
  if (await enrolOkm(db, serialNumber, observation)) return 'enrolled';
  // A concurrent first poll inserted it in between: this one is an ordinary poll.
  return (await recordPoll(db, serialNumber, observation)) ?? 'enrolled';
}

const FLEET_RELEASES = Symbol('fleet releases');

/**
 * Effective release of each kind: the OKM's pin (none if the pin is not in the catalog), else
 * the fleet latest, read once per transaction.
 */
export const pinsOf = (row: PolledOkmRow): Record<FirmwareKind, string | null> => ({
  kas: row.kas_firmware,
  batch_key: row.batch_key_firmware,
  wireless_key: row.wireless_key_firmware,
});

export async function effectiveReleases(db: Db, row: PolledOkmRow, scope: BatchScope): Promise<Partial<Record<FirmwareKind, FirmwareRelease>>> {
  const pins = pinsOf(row);
  const pinned = FIRMWARE_KINDS.filter((kind) => pins[kind] !== null);
  const [fleet, ...pinnedReleases] = await Promise.all([
    pinned.length === FIRMWARE_KINDS.length ? {} : scope.once(FLEET_RELEASES, () => fleetLatestReleasesForPoll(db)),
    ...pinned.map((kind) => findRelease(db, kind, pins[kind]!)),
  ]);
  const releases: Partial<Record<FirmwareKind, FirmwareRelease>> = { ...fleet };
  pinned.forEach((kind, index) => (releases[kind] = pinnedReleases[index]));
  return releases;
}

function offer(release: FirmwareRelease | undefined, settings: PollSettings): FirmwareOffer | null {
  const parts = parseFirmwareVersion(release?.version);
  if (!release || !parts) return null;
  return { version: release.version, parts, url: downloadUrl(release, settings), sha256: release.sha256 };
}

/** The effective interval is always 5–3600 s, whatever a database row holds. */
const clampPollingInterval = (seconds: number) => Math.min(3600, Math.max(5, seconds));

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
    pollingInterval: clampPollingInterval(row.polling_interval ?? settings.fleetPollingInterval),
  };
}

/**
 * Swaps a StoredList in the correction for the list as stored now, read with its digest, and
 * resolves again: the reply's items and digest come from one read, and a list removed since
 * the poll's first read lets the next resolver answer.
 */
async function withStoredLists(db: Db, serialNumber: string, desired: DesiredState, reported: ReportedState, correction: Correction) {
  let current = desired;
  let answer: Correction = correction;
  for (let stored = storedListIn(answer); stored; stored = storedListIn(answer)) {
    const list = await loadList(db, serialNumber, stored.column);
    current = { ...current, [stored.column === 'asset_list' ? 'assetList' : 'usersAssets']: list };
    answer = resolve(current, reported) ?? {};
  }
  return answer;
}

const storedListIn = (correction: Correction) => Object.values(correction).find((value) => value instanceof StoredList);

/** What a poll decided inside its transaction; the reply is built from it after the commit. */
type Decision =
  | { kind: 'enrolled' }
  | { kind: 'pending' }
  | { kind: 'answered'; desired: DesiredState; reported: ReportedState; answer: Correction; statusEventsQueued: number };

/** How many subscribers the poll's status was queued for: recordPoll marked the OKM (SPEC §6). */
function statusEventsQueuedBy(row: PolledOkmRow): number {
  return row.status_urls === NO_STATUS_URLS ? 0 : (JSON.parse(row.status_urls) as string[]).length;
}

/**
 * The part of a poll that writes, run inside the poll's transaction (shared with the other
 * polls of its batch, where the dialect groups them): record it, decide the correction, and
 * claim the pending message it sends.
 */
async function decide(db: Db, settings: PollSettings, request: PollRequest, scope: BatchScope): Promise<Decision> {
  const reported = parseReported(request.query);
  const observation = observe(request, reported);
  const row = await recordCall(db, request.serialNumber, observation, settings.okmAutoEnrol);
  if (row === 'enrolled' || row === 'pending') return { kind: row };

  const statusEventsQueued = statusEventsQueuedBy(row);
  const [releases, rollout, message] = await Promise.all([
    effectiveReleases(db, row, scope),
    row.rollout_id === null ? undefined : findRolloutOffer(db, row.rollout_id, request.serialNumber, request.now),
    row.pending_message_id === null ? undefined : findMessage(db, row.pending_message_id),
  ]);
  const pendingMessage = message ? { id: message.id, type: message.type, payload: message.payload } : null;
  const desired = desiredState(row, withRolloutOffer(releases, pinsOf(row), rollout), pendingMessage, settings, request.now);
  const correction = resolve(desired, reported) ?? {};

  // Two polls at once may both have picked the message; only the one that claims it sends it.
  let answered = { desired, answer: correction };
  if (pendingMessage && 'message' in correction && !(await markMessageDelivered(db, pendingMessage.id, request.now))) {
    const withoutMessage = { ...desired, pendingMessage: null };
    answered = { desired: withoutMessage, answer: resolve(withoutMessage, reported) ?? {} };
  }
  const answeredBy = correctionKey(answered.answer);
  if (answeredBy !== row.last_correction) await recordCorrection(db, request.serialNumber, answeredBy);
  const progress = rollout && rolloutProgress(rollout, reported, answered.answer);
  if (progress) await recordRolloutProgress(db, request.serialNumber, rollout, progress, request.now);
  return { kind: 'answered', ...answered, reported, statusEventsQueued };
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
  grouping: WriteGrouping,
  onStatusEventsQueued: (count: number) => void,
): (request: PollRequest) => Promise<PollReply> {
  const record = createWriteBatcher(
    db,
    grouping,
    (tx, request: PollRequest, scope) => decide(tx, settings, request, scope),
    (request) => request.serialNumber,
  );
  return async (request) => {
    const decision = await record(request);
    if (decision.kind !== 'answered') return decision;
    const { desired, reported, answer, statusEventsQueued } = decision;
    if (statusEventsQueued > 0) onStatusEventsQueued(statusEventsQueued);
    return { kind: 'answered', body: await withStoredLists(db, request.serialNumber, desired, reported, answer) };
  };
}
