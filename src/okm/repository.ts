import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { OkmsTable } from '../db/schema.ts';
import { canonicalDigest } from '../shared/canonical-json.ts';
import { storedReportValues } from '../shared/reported-values.ts';
import type { CacheMode, CheckoutContact, KeyCheckoutWindow, Okm, OkmSettings } from './model.ts';
import { forgetRemovedStatusUrls } from '../webhooks/queue-repository.ts';
import { NEVER_POLLED } from './fleet-states.ts';
import { forgetPendingOkms } from './pending-repository.ts';

/** What a poll last recorded of an OKM (okm_polls), each null while it has never polled. */
export interface LastPollColumns {
  last_sync_time: number | null;
  last_ip: string | null;
  reported: string | null;
  install_code: string | null;
}

/** An OKM as stored: its okms row and its last poll. */
export type OkmRow = Selectable<OkmsTable> & LastPollColumns;

/** The OKMs with their last poll: okms and, where it has polled, its okm_polls row. Name columns as `okms.…`. */
export const selectOkmRows = (db: Db) =>
  db
    .selectFrom('okms')
    .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
    .selectAll('okms')
    .select(['okm_polls.last_sync_time', 'okm_polls.last_ip', 'okm_polls.reported', 'okm_polls.install_code']);

const parseJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export function keyCheckoutWindowOf(row: Pick<OkmRow, 'key_checkout_window_time' | 'key_checkout_window_contact'>): KeyCheckoutWindow | null {
  return row.key_checkout_window_time === null
    ? null
    : { time: row.key_checkout_window_time, contact: row.key_checkout_window_contact as CheckoutContact };
}

export function toOkm(row: OkmRow): Okm {
  return {
    serialNumber: row.serial_number,
    customerId: row.customer_id,
    cacheMode: row.cache_mode as CacheMode | null,
    keyCheckoutWindow: keyCheckoutWindowOf(row),
    auditingEnabled: row.auditing_enabled === 1,
    assetList: parseJson(row.asset_list),
    assetListDigest: row.asset_list_digest,
    usersAssets: parseJson(row.users_assets),
    ...(row.users_assets === null ? {} : { usersAssetsJson: row.users_assets }),
    usersAssetsDigest: row.users_assets_digest,
    pollingInterval: row.polling_interval,
    firmware: { kas: row.kas_firmware, batch_key: row.batch_key_firmware, wireless_key: row.wireless_key_firmware },
    statusUrls: parseJson<string[]>(row.status_urls) ?? [],
    reported: row.reported === null ? null : storedReportValues(row.reported),
    installCode: row.install_code,
    lastSyncTime: row.last_sync_time,
    lastIp: row.last_ip,
    firmwareVersion: row.firmware_version,
    lastCorrection: row.last_correction,
    deviceTokenIssuedAt: row.device_token_issued_at,
    overdueAt: row.overdue_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The columns that hold an OKM's settings; list digests are computed here, once per write, not
 * per poll. users_assets keeps the text it was sent in; its digest is that of the parsed value,
 * which is what a device receives (the poll parses the stored text).
 */
export function settingsColumns(settings: OkmSettings): Updateable<OkmsTable> {
  return {
    cache_mode: settings.cacheMode,
    key_checkout_window_time: settings.keyCheckoutWindow?.time ?? null,
    key_checkout_window_contact: settings.keyCheckoutWindow?.contact ?? null,
    auditing_enabled: settings.auditingEnabled ? 1 : 0,
    asset_list: settings.assetList === null ? null : JSON.stringify(settings.assetList),
    asset_list_digest: settings.assetList === null ? null : canonicalDigest(settings.assetList),
    users_assets: settings.usersAssets === null ? null : (settings.usersAssetsJson ?? JSON.stringify(settings.usersAssets)),
    users_assets_digest: settings.usersAssets === null ? null : canonicalDigest(settings.usersAssets),
    polling_interval: settings.pollingInterval,
    kas_firmware: settings.firmware.kas,
    batch_key_firmware: settings.firmware.batch_key,
    wireless_key_firmware: settings.firmware.wireless_key,
    status_urls: JSON.stringify(settings.statusUrls),
  };
}

/**
 * Makes the OKM's two lists those of the ACL linked to it, which it reads from there, keeping
 * only their digests; null: neither list is configured any more.
 */
export async function setOkmListDigests(
  db: Db,
  serialNumber: string,
  digests: { assetList: string; usersAssets: string } | null,
  now: number,
): Promise<void> {
  await db
    .updateTable('okms')
    .set({
      asset_list: null,
      asset_list_digest: digests?.assetList ?? null,
      users_assets: null,
      users_assets_digest: digests?.usersAssets ?? null,
      updated_at: now,
    })
    .where('serial_number', '=', serialNumber)
    .execute();
}

/** The OKM's customer (null: none yet), or undefined when there is no such OKM. */
export async function findOkmCustomerId(db: Db, serialNumber: string): Promise<number | null | undefined> {
  const row = await db.selectFrom('okms').select('customer_id').where('serial_number', '=', serialNumber).executeTakeFirst();
  return row?.customer_id;
}

export async function findOkm(db: Db, serialNumber: string): Promise<Okm | undefined> {
  const row = await selectOkmRows(db).where('okms.serial_number', '=', serialNumber).executeTakeFirst();
  return row && toOkm(row);
}

/**
 * Inserts an OKM created without a poll: never polled until its first poll, which enrols it
 * (okm.enrolled). Returns false when the serial number is already taken.
 */
export async function insertOkm(
  db: Db,
  serialNumber: string,
  customerId: number | null,
  settings: OkmSettings,
  now: number,
): Promise<boolean> {
  const row: Insertable<OkmsTable> = {
    ...(settingsColumns(settings) as Insertable<OkmsTable>),
    serial_number: serialNumber,
    customer_id: customerId,
    created_at: now,
    updated_at: now,
    overdue_at: NEVER_POLLED,
  };
  const result = await db.insertInto('okms').values(row).onConflict((oc) => oc.column('serial_number').doNothing()).executeTakeFirst();
  const inserted = Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  if (inserted) {
    await forgetPendingOkms(db, [serialNumber]);
    await setSubscriberUrls(db, serialNumber, settings.statusUrls);
  }
  return inserted;
}

/** Writes the settings; with keepLists (an ACL sets them) the asset lists and their digests stay as they are. */
export async function updateOkmSettings(db: Db, serialNumber: string, settings: OkmSettings, now: number, keepLists = false): Promise<void> {
  const { asset_list, asset_list_digest, users_assets, users_assets_digest, ...otherColumns } = settingsColumns(settings);
  const columns = keepLists ? otherColumns : { ...otherColumns, asset_list, asset_list_digest, users_assets, users_assets_digest };
  await db
    .updateTable('okms')
    .set({ ...columns, updated_at: now })
    .where('serial_number', '=', serialNumber)
    .execute();
  await setSubscriberUrls(db, serialNumber, settings.statusUrls);
  await forgetRemovedStatusUrls(db, serialNumber, settings.statusUrls);
}

/**
 * Makes the OKM's rows of okm_subscriber_urls its status URLs, which every write of
 * okms.status_urls does in the same transaction: the rows of URLs it no longer has go, those
 * of new ones come, the others stay untouched. A config poll never writes them.
 */
async function setSubscriberUrls(db: Db, serialNumber: string, urls: readonly string[]): Promise<void> {
  let removed = db.deleteFrom('okm_subscriber_urls').where('serial_number', '=', serialNumber);
  if (urls.length > 0) removed = removed.where('url', 'not in', urls);
  await removed.execute();
  if (urls.length === 0) return;
  await db
    .insertInto('okm_subscriber_urls')
    .values(urls.map((url) => ({ serial_number: serialNumber, url })))
    .onConflict((oc) => oc.columns(['serial_number', 'url']).doNothing())
    .execute();
}

/**
 * Deletes the OKM. Its poll row goes first, explicitly rather than by the cascade: a batch of
 * polls locks an OKM's poll row before its okms row, and so does this, so the two never
 * wait on each other in opposite orders.
 */
export async function deleteOkm(db: Db, serialNumber: string): Promise<void> {
  await db.deleteFrom('okm_polls').where('serial_number', '=', serialNumber).execute();
  await db.deleteFrom('okms').where('serial_number', '=', serialNumber).execute();
}

/**
 * Records the last call of an OKM accepted from pending (time, IP, firmware version). It stays
 * "never polled" (overdue_at 0) until its first poll as an OKM, which emits okm.enrolled.
 */
export async function setLastCall(db: Db, serialNumber: string, call: { at: number; ip: string; firmwareVersion: string | null }): Promise<void> {
  await db.updateTable('okms').set({ firmware_version: call.firmwareVersion }).where('serial_number', '=', serialNumber).execute();
  await db
    .insertInto('okm_polls')
    .values({ serial_number: serialNumber, last_sync_time: call.at, last_ip: call.ip, reported: '{}', install_code: null, status_queued_at: null })
    .onConflict((oc) => oc.column('serial_number').doUpdateSet({ last_sync_time: call.at, last_ip: call.ip }))
    .execute();
}
