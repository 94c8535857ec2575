import type { Insertable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { OkmsTable } from '../db/schema.ts';
import { UNCONFIGURED_OKM } from './model.ts';
import { settingsColumns } from './repository.ts';

/** What one poll writes on the OKM's row. */
export interface PollObservation {
  now: number;
  ip: string;
  firmwareVersion: string | null;
  /** JSON object of the reported values, as stored in okms.reported. */
  reported: string;
  /** Only a valid install code is written; otherwise the stored one stays. */
  installCode: string | undefined;
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
}

const observationColumns = (observation: PollObservation) => ({
  last_sync_time: observation.now,
  last_ip: observation.ip,
  firmware_version: observation.firmwareVersion,
  reported: observation.reported,
  ...(observation.installCode === undefined ? {} : { install_code: observation.installCode }),
});

/** Records the poll on a known OKM and returns its desired state in the same statement; undefined when unknown. */
export async function recordPoll(db: Db, serialNumber: string, observation: PollObservation): Promise<PolledOkmRow | undefined> {
  return db
    .updateTable('okms')
    .set(observationColumns(observation))
    .where('serial_number', '=', serialNumber)
    .returning((eb) => [
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
      eb
        .selectFrom('okm_messages')
        .select('okm_messages.id')
        .whereRef('okm_messages.okm_serial', '=', 'okms.serial_number')
        .where('okm_messages.delivered_at', 'is', null)
        .orderBy('okm_messages.id')
        .limit(1)
        .as('pending_message_id'),
    ])
    .executeTakeFirst();
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
      ...observationColumns(observation),
    })
    .onConflict((oc) => oc.column('serial_number').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** The stored items of a configured list, or null when it is no longer configured. */
export async function loadList(db: Db, serialNumber: string, column: 'asset_list' | 'users_assets'): Promise<unknown[] | null> {
  const row = await db.selectFrom('okms').select(column).where('serial_number', '=', serialNumber).executeTakeFirst();
  const text = row?.[column] ?? null;
  return text === null ? null : (JSON.parse(text) as unknown[]);
}
