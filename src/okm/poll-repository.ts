import { sql, type Expression, type ExpressionBuilder, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Database, FirmwareReleasesTable, OkmsTable } from '../db/schema.ts';
import { toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { UNCONFIGURED_OKM } from './model.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { settingsColumns } from './repository.ts';
import type { ConfiguredList } from './resolvers/types.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE } from './fleet-states.ts';
import { emitFleetEvent } from '../webhooks/fleet-events.ts';

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
  /** JSON object of the reported values, as stored in okms.reported. */
  reported: string;
  /** Only a valid install code is written; null leaves the stored one. */
  installCode: string | null;
  /** The fleet default polling interval, for the due-by time of an OKM without its own. */
  fleetPollingInterval: number;
}

/** The desired-state columns a poll needs (list digests, not the lists) and the oldest undelivered message. */
export interface PolledOkmRow {
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
  /** The reply key of the previous poll's correction: the poll writes its own only when it differs. */
  last_correction: string | null;
  /** Not written by the poll, so as it was: non-null when the poll ends a silence or is the OKM's first (0). */
  overdue_at: number | null;
  /** The rollout whose offer applies to this OKM; null (most OKMs): none, and nothing more to read. */
  rollout_id: number | null;
  /** The versions stored before this poll: the poll writes the reported ones only when they differ (recordReportedVersions). */
  firmware_version: string | null;
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
}

const POLLED_COLUMNS = [
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
  'last_correction',
  'overdue_at',
  'rollout_id',
  'firmware_version',
  'batch_key_firmware_version',
  'wireless_key_firmware_version',
] as const;

/** When an OKM polling now with this interval (seconds) becomes overdue: after MISSED_INTERVALS_UNTIL_OVERDUE intervals. */
const dueBy = (now: Expression<number>, intervalSeconds: Expression<number>) =>
  sql<number>`cast(${now} as bigint) + ${MISSED_INTERVALS_UNTIL_OVERDUE * 1000} * ${intervalSeconds}`;

/** The due-by time of an OKM inserted by its first poll, which has no interval of its own yet. */
export const firstDueBy = ({ now, fleetPollingInterval }: PollObservation) => now + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * fleetPollingInterval;

const oldestPendingMessageId = (eb: ExpressionBuilder<Database, 'okms'>) =>
  eb
    .selectFrom('okm_messages')
    .select('okm_messages.id')
    .whereRef('okm_messages.okm_serial', '=', 'okms.serial_number')
    .where('okm_messages.delivered_at', 'is', null)
    .orderBy('okm_messages.id')
    .limit(1)
    .as('pending_message_id');

/** A poll's observed values as SQL expressions: parameters in the per-row statement, a row set's columns in the set-based one. */
export type ObservedValues = { [K in keyof PollObservation]: Expression<PollObservation[K]> };

/**
 * What a poll SETs on its OKM's row: the one definition for the per-row and the set-based
 * statement. The reported firmware versions are not among them: SQLite rewrites the entries of
 * every index holding a column the SET names, changed or not, and three indexes hold the
 * versions; recordReportedVersions writes them when they differ, which is rare.
 */
export const pollSets = (eb: ExpressionBuilder<Database, 'okms'>, observed: Omit<ObservedValues, 'firmwareVersion' | 'batchKeyFirmwareVersion' | 'wirelessKeyFirmwareVersion'>) => ({
  last_sync_time: observed.now,
  last_ip: observed.ip,
  reported: observed.reported,
  install_code: eb.fn.coalesce(observed.installCode, eb.ref('install_code')),
  // Queues the status for the OKM's subscribers (SPEC §6) in the poll's own row; the
  // dispatcher fans it out. A mark already there stays: its fan-out reads the newest status.
  status_queued_at: eb
    .case()
    .when('status_urls', '=', NO_STATUS_URLS)
    .then(null)
    .else(eb.fn.coalesce(eb.ref('status_queued_at'), observed.now))
    .end(),
  due_by: dueBy(observed.now, eb.fn.coalesce('polling_interval', observed.fleetPollingInterval)),
});

/** What a poll RETURNs from its OKM's row (the PolledOkmRow): the one definition for both statements. */
export const pollReturning = (eb: ExpressionBuilder<Database, 'okms'>) => [...POLLED_COLUMNS, oldestPendingMessageId(eb)] as const;

const recordPollQuery = precompiledQuery<PolledOkmRow, [string, number, string, string, string | null, number]>(
  6,
  (db, [serialNumber, now, ip, reported, installCode, fleetPollingInterval]) =>
    db
      .updateTable('okms')
      .set((eb) =>
        pollSets(eb, {
          now: eb.val(now as number),
          ip: eb.val(ip as string),
          reported: eb.val(reported as string),
          installCode: eb.val(installCode as string | null),
          fleetPollingInterval: eb.val(fleetPollingInterval as number),
        }),
      )
      .where('serial_number', '=', serialNumber as string)
      .returning(pollReturning),
);

/**
 * Records the poll on a known OKM and returns its desired state in the same statement;
 * undefined when unknown. The reported versions are written apart (recordReportedVersions).
 */
export async function recordPoll(db: Db, serialNumber: string, observation: PollObservation): Promise<PolledOkmRow | undefined> {
  const { now, ip, reported, installCode, fleetPollingInterval } = observation;
  const result = await recordPollQuery(db, serialNumber, now, ip, reported, installCode, fleetPollingInterval);
  return result.rows[0];
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

/** What the end of a silence reports: the OKM's owner and what its poll just recorded. */
export interface SilencedOkm {
  customer_id: number | null;
  last_ip: string | null;
  firmware_version: string | null;
}

const endSilenceQuery = precompiledQuery<SilencedOkm, [string]>(1, (db, [serialNumber]) =>
  db
    .updateTable('okms')
    .set({ overdue_at: null })
    .where('serial_number', '=', serialNumber as string)
    .where('overdue_at', 'is not', null)
    .returning(['customer_id', 'last_ip', 'firmware_version']),
);

/** A poll whose row had overdue_at set: the previous value, and when it polled. */
export interface EndOfSilence {
  serialNumber: string;
  previousOverdueAt: number;
  now: number;
}

/**
 * The follow-up of a poll whose row had overdue_at set, rare like recordCorrection: clears it
 * and emits okm.back_online (the sweep had found the OKM silent) or, for 0, okm.enrolled (its
 * first poll as an OKM, created by the admin API or accepted from pending). Only one of
 * concurrent polls clears it, so the event is emitted once.
 */
export async function recordEndOfSilence(db: Db, end: EndOfSilence): Promise<void> {
  const [okm] = (await endSilenceQuery(db, end.serialNumber)).rows;
  if (okm) await emitEndOfSilence(db, end, okm);
}

/** okm.enrolled or okm.back_online for an OKM whose overdue_at its poll has just cleared. */
export async function emitEndOfSilence(db: Db, { serialNumber, previousOverdueAt, now }: EndOfSilence, okm: SilencedOkm): Promise<void> {
  const data = okmEventData(serialNumber, now, okm.last_ip, okm.firmware_version);
  await emitFleetEvent(
    db,
    previousOverdueAt === 0
      ? { type: 'okm.enrolled', customerId: okm.customer_id, data }
      : { type: 'okm.back_online', customerId: okm.customer_id, data: { ...data, overdue_since: new Date(previousOverdueAt).toISOString() } },
    now,
  );
}

const recordCorrectionQuery = precompiledQuery<never, [string, string | null]>(2, (db, [serialNumber, correction]) =>
  db
    .updateTable('okms')
    .set({ last_correction: correction as string | null })
    .where('serial_number', '=', serialNumber as string),
);

/**
 * Records which resolver answered the poll (its reply key; null for {}). The poll's own UPDATE
 * cannot carry it, since the correction is decided from the row that UPDATE returns; so this
 * runs only when the verdict changed since the previous poll, which a fleet in its steady
 * state (the same verdict poll after poll) never pays.
 */
export async function recordCorrection(db: Db, serialNumber: string, correction: string | null): Promise<void> {
  await recordCorrectionQuery(db, serialNumber, correction);
}

/** Inserts an unknown OKM (no customer, nothing configured) with this poll recorded; false when it already exists. */
export async function enrolOkm(db: Db, serialNumber: string, observation: PollObservation): Promise<boolean> {
  const result = await db
    .insertInto('okms')
    .values({
      ...(settingsColumns(UNCONFIGURED_OKM) as Insertable<OkmsTable>),
      serial_number: serialNumber,
      customer_id: null,
      created_at: observation.now,
      updated_at: observation.now,
      last_sync_time: observation.now,
      last_ip: observation.ip,
      firmware_version: observation.firmwareVersion,
      batch_key_firmware_version: observation.batchKeyFirmwareVersion,
      wireless_key_firmware_version: observation.wirelessKeyFirmwareVersion,
      reported: observation.reported,
      install_code: observation.installCode,
      due_by: firstDueBy(observation),
      overdue_at: null,
    })
    .onConflict((oc) => oc.column('serial_number').doNothing())
    .executeTakeFirst();
  const enrolled = Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  if (enrolled) await emitEnrolled(db, serialNumber, observation);
  return enrolled;
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

/** A configured list as stored now (on the OKM, or on the ACL linked to it), with its digest; null when it is no longer configured. */
export async function loadList(db: Db, serialNumber: string, column: 'asset_list' | 'users_assets'): Promise<ConfiguredList | null> {
  const [digestColumn, aclColumn] = column === 'asset_list' ? (['asset_list_digest', 'locks'] as const) : (['users_assets_digest', 'users'] as const);
  const row = await db
    .selectFrom('okms')
    .leftJoin('acls', 'acls.okm_serial', 'okms.serial_number')
    .leftJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .select([`okms.${column} as own_items`, `okms.${digestColumn} as digest`, `acl_contents.${aclColumn} as acl_items`])
    .where('okms.serial_number', '=', serialNumber)
    .executeTakeFirst();
  const items = row?.own_items ?? row?.acl_items ?? null;
  const digest = row?.digest ?? null;
  return items === null || digest === null ? null : { items: JSON.parse(items) as unknown[], digest };
}

/** What a poll of the OKM would read, without recording one: for the drift report. */
export interface PolledOkmSnapshot extends PolledOkmRow {
  reported: string | null;
  last_sync_time: number | null;
}

export async function findPolledOkm(db: Db, serialNumber: string): Promise<PolledOkmSnapshot | undefined> {
  return db
    .selectFrom('okms')
    .select((eb) => [...POLLED_COLUMNS, 'reported', 'last_sync_time', oldestPendingMessageId(eb)])
    .where('serial_number', '=', serialNumber)
    .executeTakeFirst();
}
