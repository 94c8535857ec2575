import type { ExpressionBuilder, Insertable, Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { Database, FirmwareReleasesTable, OkmsTable } from '../db/schema.ts';
import { toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { UNCONFIGURED_OKM } from './model.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { settingsColumns } from './repository.ts';
import type { ConfiguredList } from './resolvers/types.ts';

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
  /** The rollout whose offer applies to this OKM; null (most OKMs): none, and nothing more to read. */
  rollout_id: number | null;
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
  'rollout_id',
] as const;

const oldestPendingMessageId = (eb: ExpressionBuilder<Database, 'okms'>) =>
  eb
    .selectFrom('okm_messages')
    .select('okm_messages.id')
    .whereRef('okm_messages.okm_serial', '=', 'okms.serial_number')
    .where('okm_messages.delivered_at', 'is', null)
    .orderBy('okm_messages.id')
    .limit(1)
    .as('pending_message_id');

const recordPollQuery = precompiledQuery<
  PolledOkmRow,
  [string, number, string, string | null, string | null, string | null, string, string | null]
>(
  8,
  (db, [serialNumber, now, ip, firmwareVersion, batchKeyFirmwareVersion, wirelessKeyFirmwareVersion, reported, installCode]) =>
    db
      .updateTable('okms')
      .set((eb) => ({
        last_sync_time: now as number,
        last_ip: ip as string,
        firmware_version: firmwareVersion as string | null,
        batch_key_firmware_version: batchKeyFirmwareVersion as string | null,
        wireless_key_firmware_version: wirelessKeyFirmwareVersion as string | null,
        reported: reported as string,
        install_code: eb.fn.coalesce(eb.val(installCode as string | null), eb.ref('install_code')),
        // Queues the status for the OKM's subscribers (SPEC §6) in the poll's own row; the
        // dispatcher fans it out. A mark already there stays: its fan-out reads the newest status.
        status_queued_at: eb
          .case()
          .when('status_urls', '=', NO_STATUS_URLS)
          .then(null)
          .else(eb.fn.coalesce(eb.ref('status_queued_at'), eb.val(now as number)))
          .end(),
      }))
      .where('serial_number', '=', serialNumber as string)
      .returning((eb) => [...POLLED_COLUMNS, oldestPendingMessageId(eb)]),
);

/** Records the poll on a known OKM and returns its desired state in the same statement; undefined when unknown. */
export async function recordPoll(db: Db, serialNumber: string, observation: PollObservation): Promise<PolledOkmRow | undefined> {
  const { now, ip, firmwareVersion, batchKeyFirmwareVersion, wirelessKeyFirmwareVersion, reported, installCode } = observation;
  const result = await recordPollQuery(db, serialNumber, now, ip, firmwareVersion, batchKeyFirmwareVersion, wirelessKeyFirmwareVersion, reported, installCode);
  return result.rows[0];
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
    })
    .onConflict((oc) => oc.column('serial_number').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
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
