import { sql, type ExpressionBuilder, type Insertable, type OnConflictBuilder, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Database, FirmwareReleasesTable, OkmPollsTable, OkmsTable } from '../db/schema.ts';
import { toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { NEVER_POLLED } from '../okm/fleet-states.ts';
import { UNCONFIGURED_OKM } from '../okm/model.ts';
import { forgetPendingOkms } from '../okm/pending-repository.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { settingsColumns } from '../okm/repository.ts';
import type { ConfiguredList } from './resolvers/types.ts';
import { emitFleetEvent, emitFleetEvents } from '../webhooks/fleet-events.ts';
import type { StuckEvent } from './poll-verdict.ts';
import { correctionColumns, type CorrectionColumns, type CorrectionRecord } from '../okm/correction-record.ts';

/** okms.status_urls of an OKM without subscribers. */
export const NO_STATUS_URLS = '[]';

/** What one poll writes on the OKM's row. */
export interface PollObservation {
  now: number;
  ip: string;
  firmwareVersion: string | null;
  /** batchKeyFirmware and wirelessKeyFirmware as reported, for the fleet summary's firmware distribution. */
  batchKeyFirmwareVersion: string | null;
  wirelessKeyFirmwareVersion: string | null;
  /** The poll's report as stored in okm_polls.reported (storedReport, src/shared/reported-values.ts). */
  reported: string;
  /** Only a valid install code is written; null leaves the stored one. */
  installCode: string | null;
}

/**
 * The desired-state columns a poll needs (list digests, not the lists), the oldest undelivered
 * message, and the columns its CorrectionRecord is read from: the poll writes its own record
 * only when it differs.
 */
export interface PolledOkmRow extends CorrectionColumns {
  cache_mode: number | null;
  key_checkout_window_time: number | null;
  key_checkout_window_contact: string | null;
  auditing_enabled: number;
  asset_list_digest: string | null;
  users_assets_digest: string | null;
  polling_interval: number | null;
  kas_firmware: string | null;
  batch_key_firmware: string | null;
  wireless_key_firmware: string | null;
  pending_message_id: number | null;
  /** JSON array of the subscriber URLs of status events. */
  status_urls: string;
  customer_id: number | null;
  /** Non-null when the poll ends a silence the fleet pass recorded, or is the OKM's first (0). */
  overdue_at: number | null;
  /** The rollout whose offer applies to this OKM; null (most OKMs): none, and nothing more to read. */
  rollout_id: number | null;
  /** The versions stored before this poll: the poll writes the reported ones only when they differ (recordReportedVersions). */
  firmware_version: string | null;
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
}

/** A PolledOkmRow once its poll is counted: `polls` is that poll's number. */
export interface CountedPollRow extends PolledOkmRow {
  polls: number;
}

/** The okms columns of a PolledOkmRow; with the oldest pending message's id, polledColumns. */
export const POLLED_COLUMNS = [
  'cache_mode',
  'key_checkout_window_time',
  'key_checkout_window_contact',
  'auditing_enabled',
  'asset_list_digest',
  'users_assets_digest',
  'polling_interval',
  'kas_firmware',
  'batch_key_firmware',
  'wireless_key_firmware',
  'status_urls',
  'customer_id',
  'last_correction',
  'correction_digest',
  'correction_since_poll',
  'offer_hold',
  'stuck_resolver',
  'stuck_since',
  'overdue_at',
  'rollout_id',
  'firmware_version',
  'batch_key_firmware_version',
  'wireless_key_firmware_version',
] as const;

// The poll's statements write their constants into the SQL (`lit`) rather than bind them: on
// SQLite every value bound goes through better-sqlite3's N-API binder, about 1.5 k
// instructions a value, for every poll.
const oldestPendingMessageId = (eb: ExpressionBuilder<Database, 'okms'>) =>
  eb
    .selectFrom('okm_messages')
    .select('okm_messages.id')
    .whereRef('okm_messages.okm_serial', '=', 'okms.serial_number')
    .where('okm_messages.delivered_at', 'is', null)
    .orderBy('okm_messages.id')
    .limit(eb.lit(1))
    .as('pending_message_id');

/** What a poll RETURNs from its OKM's row (the PolledOkmRow): the one definition for both statement forms. */
export const polledColumns = (eb: ExpressionBuilder<Database, 'okms'>) => [...POLLED_COLUMNS, oldestPendingMessageId(eb)] as const;

/**
 * The status mark a poll writes (contract §6): its time when the OKM has subscribers, so that the
 * dispatcher fans its status out; none otherwise. A mark already there stays (see okmPollUpsert).
 */
export const statusMarkOf = (row: Pick<PolledOkmRow, 'status_urls'>, now: number) => (row.status_urls === NO_STATUS_URLS ? null : now);

/** The okm_polls row of one poll. */
export const okmPollRow = (serialNumber: string, observation: PollObservation, statusMark: number | null): Insertable<OkmPollsTable> => ({
  serial_number: serialNumber,
  last_sync_time: observation.now,
  last_ip: observation.ip,
  reported: observation.reported,
  install_code: observation.installCode,
  status_queued_at: statusMark,
  polls: 1,
});

/**
 * What a poll writes on its OKM's okm_polls row, inserted by its first poll: the one
 * definition for the per-row and the set-based statement. An installer code not reported in a
 * valid form leaves the stored one; a status mark already there stays, since its fan-out
 * reads the newest status; an OKM without subscribers has none.
 */
export const okmPollUpsert = (oc: OnConflictBuilder<Database, 'okm_polls'>) =>
  oc.column('serial_number').doUpdateSet((eb) => ({
    polls: eb('okm_polls.polls', '+', eb.lit(1)),
    last_sync_time: eb.ref('excluded.last_sync_time'),
    last_ip: eb.ref('excluded.last_ip'),
    reported: eb.ref('excluded.reported'),
    install_code: eb.fn.coalesce('excluded.install_code', 'okm_polls.install_code'),
    status_queued_at: eb
      .case()
      .when('excluded.status_queued_at', 'is', null)
      .then(null)
      .else(eb.fn.coalesce('okm_polls.status_queued_at', 'excluded.status_queued_at'))
      .end(),
  }));

const readPolledOkmQuery = precompiledQuery<PolledOkmRow, [string]>(1, (db, [serialNumber]) =>
  db
    .selectFrom('okms')
    .select(polledColumns)
    .where('okms.serial_number', '=', serialNumber as string),
);

const upsertOkmPollQuery = precompiledQuery<{ polls: number }, [string, number, string, string, string | null, number | null]>(6, (db, [serialNumber, now, ip, reported, installCode, statusMark]) =>
  db
    .insertInto('okm_polls')
    .values({
      serial_number: serialNumber as string,
      last_sync_time: now as number,
      last_ip: ip as string,
      reported: reported as string,
      install_code: installCode as string | null,
      status_queued_at: statusMark as number | null,
      polls: sql.lit(1),
    })
    .onConflict(okmPollUpsert)
    .returning('okm_polls.polls'),
);

/**
 * Records the poll of a known OKM and returns its desired state; undefined when unknown. The
 * OKM's wide row is only read; the poll writes its narrow okm_polls row, which has no index
 * but its key. The reported versions are written apart, only when they differ (recordReportedVersions).
 */
export async function recordPoll(db: Db, serialNumber: string, observation: PollObservation): Promise<CountedPollRow | undefined> {
  const [row] = (await readPolledOkmQuery(db, serialNumber)).rows;
  if (!row) return undefined;
  const { now, ip, reported, installCode } = observation;
  const [counted] = (await upsertOkmPollQuery(db, serialNumber, now, ip, reported, installCode, statusMarkOf(row, now))).rows;
  // The driver's row is this poll's alone: completed in place rather than copied.
  const polled = row as CountedPollRow;
  polled.polls = Number(counted!.polls);
  return polled;
}

/** Whether the versions a poll reported differ from those stored on its OKM before it. */
export const reportsOtherVersions = (row: PolledOkmRow, observation: PollObservation) =>
  row.firmware_version !== observation.firmwareVersion ||
  row.batch_key_firmware_version !== observation.batchKeyFirmwareVersion ||
  row.wireless_key_firmware_version !== observation.wirelessKeyFirmwareVersion;

const recordReportedVersionsQuery = precompiledQuery<never, [string, string | null, string | null, string | null]>(4, (db, [serialNumber, kas, batchKey, wirelessKey]) =>
  db
    .updateTable('okms')
    .set({
      firmware_version: kas as string | null,
      batch_key_firmware_version: batchKey as string | null,
      wireless_key_firmware_version: wirelessKey as string | null,
    })
    .where('serial_number', '=', serialNumber as string),
);

/** Writes the firmware versions a poll reported, for a poll whose versions differ from the stored ones (reportsOtherVersions). */
export async function recordReportedVersions(db: Db, serialNumber: string, observation: PollObservation): Promise<void> {
  await recordReportedVersionsQuery(db, serialNumber, observation.firmwareVersion, observation.batchKeyFirmwareVersion, observation.wirelessKeyFirmwareVersion);
}

/** The data of okm.enrolled and okm.back_online: the poll that brought the event. */
const okmEventData = (serialNumber: string, now: number, lastIp: string | null, firmwareVersion: string | null) => ({
  serial_number: serialNumber,
  last_sync_time: new Date(now).toISOString(),
  last_ip: lastIp,
  firmware_version: firmwareVersion,
});

/** What the end of a silence reports besides its poll: the OKM's owner and firmware version. */
export interface SilencedOkm {
  customer_id: number | null;
  firmware_version: string | null;
}

const endSilenceQuery = precompiledQuery<SilencedOkm, [string]>(1, (db, [serialNumber]) =>
  db
    .updateTable('okms')
    .set({ overdue_at: null })
    .where('serial_number', '=', serialNumber as string)
    .where('overdue_at', 'is not', null)
    .returning(['customer_id', 'firmware_version']),
);

/** A poll whose row had overdue_at set: the previous value, and when and from where it polled. */
export interface EndOfSilence {
  serialNumber: string;
  previousOverdueAt: number;
  now: number;
  ip: string;
}

/**
 * The follow-up of a poll whose row had overdue_at set, rare like recordCorrection: clears it
 * and emits okm.back_online (the fleet pass had found the OKM silent) or, for 0, okm.enrolled
 * (its first poll as an OKM, created by the admin API or accepted from pending). Only one of
 * concurrent polls clears it, so the event is emitted once.
 */
export async function recordEndOfSilence(db: Db, end: EndOfSilence): Promise<void> {
  const [okm] = (await endSilenceQuery(db, end.serialNumber)).rows;
  if (okm) await emitEndOfSilence(db, end, okm);
}

/** okm.enrolled or okm.back_online for an OKM whose overdue_at its poll has just cleared. */
export async function emitEndOfSilence(db: Db, { serialNumber, previousOverdueAt, now, ip }: EndOfSilence, okm: SilencedOkm): Promise<void> {
  const data = okmEventData(serialNumber, now, ip, okm.firmware_version);
  await emitFleetEvent(
    db,
    previousOverdueAt === NEVER_POLLED
      ? { type: 'okm.enrolled', customerId: okm.customer_id, data }
      : { type: 'okm.back_online', customerId: okm.customer_id, data: { ...data, overdue_since: new Date(previousOverdueAt).toISOString() } },
    now,
  );
}

const recordCorrectionQuery = precompiledQuery<never, [string, string | null, string | null, number | null, string | null, string | null, number | null]>(
  7,
  (db, [serialNumber, correction, digest, sincePoll, holds, stuckResolver, stuckSince]) =>
    db
      .updateTable('okms')
      .set({
        last_correction: correction as string | null,
        correction_digest: digest as string | null,
        correction_since_poll: sincePoll as number | null,
        offer_hold: holds as string | null,
        stuck_resolver: stuckResolver as string | null,
        stuck_since: stuckSince as number | null,
      })
      .where('serial_number', '=', serialNumber as string),
);

/**
 * Records what the poll decided about its OKM's corrections (poll-verdict.ts): which resolver
 * answered, since which poll, the retry policy's holds, stuck. The poll's own upsert cannot
 * carry it, since the answer is decided from the row the poll reads; so this runs only when
 * the record changed, which a fleet in its steady state (the same verdict poll after poll)
 * never pays.
 */
export async function recordCorrection(db: Db, serialNumber: string, record: CorrectionRecord): Promise<void> {
  const columns = correctionColumns(record);
  await recordCorrectionQuery(
    db,
    serialNumber,
    columns.last_correction,
    columns.correction_digest,
    columns.correction_since_poll,
    columns.offer_hold,
    columns.stuck_resolver,
    columns.stuck_since,
  );
}

/** A poll's okm.stuck / okm.unstuck events, for the OKM's customer. */
export interface StuckEvents {
  serialNumber: string;
  customerId: number | null;
  events: readonly StuckEvent[];
  now: number;
}

/** Emits okm.stuck and okm.unstuck (contract §14 and §15) in the poll's transaction. */
export async function emitStuckEvents(db: Db, polls: readonly StuckEvents[]): Promise<void> {
  const events = polls.flatMap(({ serialNumber, customerId, events, now }) =>
    events.map(({ type, stuck, polls }) => ({
      type,
      customerId,
      data: { serial_number: serialNumber, resolver: stuck.resolver, since: new Date(stuck.since).toISOString(), polls, at: new Date(now).toISOString() },
    })),
  );
  if (events.length > 0) await emitFleetEvents(db, events, polls[0]!.now);
}

/**
 * An unknown OKM's enrolment by its first poll (auto-enrol on): the okms row below, the
 * okm_polls row of that poll, its serial number taken off the pending list, and okm.enrolled.
 * enrolOkm writes it for one poll, the set-based statement of poll-batch-repository.ts for a
 * batch, both from these definitions. An OKM created without a poll (admin API, accepted from
 * pending) is never polled until its first poll, which emits okm.enrolled (emitEndOfSilence).
 */

/** The okms row of an OKM its first poll enrols: no customer, nothing configured, the versions it reported, polled. */
export const enrolledOkmRow = (serialNumber: string, observation: PollObservation): Insertable<OkmsTable> => ({
  ...(settingsColumns(UNCONFIGURED_OKM) as Insertable<OkmsTable>),
  serial_number: serialNumber,
  customer_id: null,
  created_at: observation.now,
  updated_at: observation.now,
  firmware_version: observation.firmwareVersion,
  batch_key_firmware_version: observation.batchKeyFirmwareVersion,
  wireless_key_firmware_version: observation.wirelessKeyFirmwareVersion,
  overdue_at: null,
});

/** The okm_polls row of an enrolling poll: no status mark, since the OKM has no subscribers yet. */
export const enrolledPollRow = (serialNumber: string, observation: PollObservation): Insertable<OkmPollsTable> => okmPollRow(serialNumber, observation, null);

/** Enrols an unknown OKM by this poll (see enrolledOkmRow); false when it already exists (a concurrent first poll). */
export async function enrolOkm(db: Db, serialNumber: string, observation: PollObservation): Promise<boolean> {
  const result = await db
    .insertInto('okms')
    .values(enrolledOkmRow(serialNumber, observation))
    .onConflict((oc) => oc.column('serial_number').doNothing())
    .executeTakeFirst();
  const enrolled = Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  if (!enrolled) return false;
  await db.insertInto('okm_polls').values(enrolledPollRow(serialNumber, observation)).execute();
  await forgetPendingOkms(db, [serialNumber]);
  await emitEnrolled(db, serialNumber, observation);
  return true;
}

/** okm.enrolled for an OKM its first poll has just inserted. */
export async function emitEnrolled(db: Db, serialNumber: string, { now, ip, firmwareVersion }: PollObservation): Promise<void> {
  await emitFleetEvent(db, { type: 'okm.enrolled', customerId: null, data: okmEventData(serialNumber, now, ip, firmwareVersion) }, now);
}

const fleetLatestQuery = precompiledQuery<Selectable<FirmwareReleasesTable>, []>(
  0,
  (db) =>
    db
      .selectFrom('fleet_firmware')
      .innerJoin('firmware_releases', (join) =>
        join.onRef('firmware_releases.kind', '=', 'fleet_firmware.kind').onRef('firmware_releases.version', '=', 'fleet_firmware.version'),
      )
      .selectAll('firmware_releases'),
);

/** The fleet-wide latest release of each kind that has one (the catalog's query, precompiled for the poll). */
export async function fleetLatestReleasesForPoll(db: Db): Promise<Partial<Record<FirmwareKind, FirmwareRelease>>> {
  const { rows } = await fleetLatestQuery(db);
  return Object.fromEntries(rows.map((row) => [row.kind, toRelease(row)]));
}

type ListColumn = 'asset_list' | 'users_assets';

/**
 * The read of one configured list: the OKM's own, its digest, and the linked ACL's as a
 * subquery (an OKM has at most one ACL; SQLite ran the same read as a two-table LEFT JOIN four
 * times slower, 17 against 4 µs). Precompiled, so that PostgreSQL plans it once per connection:
 * planned on every call it cost 0.38 ms of planning for 0.05 ms of execution.
 */
const listQuery = (column: ListColumn) => {
  const [digestColumn, aclColumn] = column === 'asset_list' ? (['asset_list_digest', 'locks'] as const) : (['users_assets_digest', 'users'] as const);
  return precompiledQuery<{ own_items: string | null; digest: string | null; acl_items: string | null }, [string]>(1, (db, [serialNumber]) =>
    db
      .selectFrom('okms')
      .select((eb) => [
        `okms.${column} as own_items`,
        `okms.${digestColumn} as digest`,
        eb
          .selectFrom('acls')
          .innerJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
          .select(`acl_contents.${aclColumn}`)
          .whereRef('acls.okm_serial', '=', 'okms.serial_number')
          .as('acl_items'),
      ])
      .where('okms.serial_number', '=', serialNumber as string),
  );
};
const LIST_QUERIES: Record<ListColumn, ReturnType<typeof listQuery>> = { asset_list: listQuery('asset_list'), users_assets: listQuery('users_assets') };

/** A configured list as stored now (on the OKM, or on the ACL linked to it), with its digest; null when it is no longer configured. */
export async function loadList(db: Db, serialNumber: string, column: ListColumn): Promise<ConfiguredList | null> {
  const [row] = (await LIST_QUERIES[column](db, serialNumber)).rows;
  const items = row?.own_items ?? row?.acl_items ?? null;
  const digest = row?.digest ?? null;
  return items === null || digest === null ? null : { items: JSON.parse(items) as unknown[], digest };
}

/** What a poll of the OKM would read, without recording one: for the drift report. */
export interface PolledOkmSnapshot extends CountedPollRow {
  reported: string | null;
  last_sync_time: number | null;
}

export async function findPolledOkm(db: Db, serialNumber: string): Promise<PolledOkmSnapshot | undefined> {
  return db
    .selectFrom('okms')
    .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
    .select((eb) => [
      ...POLLED_COLUMNS.map((column) => `okms.${column}` as const),
      'okm_polls.reported',
      'okm_polls.last_sync_time',
      eb.fn.coalesce('okm_polls.polls', eb.lit(0)).as('polls'),
      oldestPendingMessageId(eb),
    ])
    .where('okms.serial_number', '=', serialNumber)
    .executeTakeFirst()
    .then((row) => row && { ...row, polls: Number(row.polls) });
}
