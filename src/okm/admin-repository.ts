import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { fleetStateCondition, isStuck, type FleetState } from './fleet-states.ts';
import type { Okm } from './model.ts';
import { correctionRecordOf, pollsSentWithoutEffect } from './correction-record.ts';
import { selectOkmRows, toOkm, type OkmRow } from './repository.ts';

/** Why an OKM is stuck (contract §15): the resolver whose correction it does not take. */
export interface OkmStuck {
  /** The resolver's reply key. */
  resolver: string;
  /** When the poll found it stuck, epoch ms. */
  since: number;
  /** The polls, up to its last, that were sent that correction without effect. */
  polls: number;
}

/** An OKM with the name of the customer it belongs to and the ACL linked to it. */
export interface OwnedOkm {
  okm: Okm;
  customerName: string | null;
  /** The ACL whose locks and users are this OKM's asset lists, if one is linked. */
  aclId: string | null;
  /** null: not stuck. */
  stuck: OkmStuck | null;
}

export interface OkmListFilter {
  /** Only this customer's OKMs; undefined: every customer's. */
  customerId?: number;
  /** Only OKMs without a customer. */
  unassigned?: boolean;
  overdue?: boolean;
  firmwareVersion?: string;
  state?: FleetState;
  /** Only OKMs whose serial number begins with this (itself a valid serial number). */
  serialPrefix?: string;
  /** Only OKMs whose last poll this resolver answered (its reply key). */
  lastCorrection?: string;
  /** Only OKMs whose status URLs hold this URL. */
  subscriberUrl?: string;
}

/** The OKM list pages by serial number, the primary key, which every OKM index ends with. */
export const OKM_PAGES = cursorList<[serialNumber: string]>('okms', ['string']);

type OkmsExpressionBuilder = ExpressionBuilder<Database, 'okms'>;

/**
 * Serial numbers are of A-Z a-z 0-9 . _ - only, all below "{": those beginning with the
 * prefix are exactly those from the prefix up to the prefix followed by "{", an index range.
 */
const AFTER_EVERY_SERIAL_CHARACTER = '{';

function listConditions(eb: OkmsExpressionBuilder, filter: OkmListFilter): Expression<SqlBool> {
  const conditions: Expression<SqlBool>[] = [];
  if (filter.customerId !== undefined) conditions.push(eb('okms.customer_id', '=', filter.customerId));
  if (filter.unassigned) conditions.push(eb('okms.customer_id', 'is', null));
  if (filter.firmwareVersion !== undefined) conditions.push(eb('okms.firmware_version', '=', filter.firmwareVersion));
  if (filter.overdue === true) conditions.push(fleetStateCondition('overdue'));
  // NOT of a condition that can be NULL (a comparison with a NULL column) drops those rows too: not overdue is every OKM where overdue is not true.
  if (filter.overdue === false) conditions.push(sql<SqlBool>`not coalesce(${fleetStateCondition('overdue')}, ${sql.lit(false)})`);
  if (filter.state !== undefined) conditions.push(fleetStateCondition(filter.state));
  if (filter.lastCorrection !== undefined) conditions.push(eb('okms.last_correction', '=', filter.lastCorrection));
  if (filter.serialPrefix !== undefined) {
    conditions.push(eb('okms.serial_number', '>=', filter.serialPrefix));
    conditions.push(eb('okms.serial_number', '<', filter.serialPrefix + AFTER_EVERY_SERIAL_CHARACTER));
  }
  return eb.and(conditions);
}

const selectOwnedOkms = (db: Db) =>
  selectOkmRows(db)
    .leftJoin('customers', 'customers.id', 'okms.customer_id')
    .leftJoin('acls', 'acls.okm_serial', 'okms.serial_number')
    .leftJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .select(['customers.name as customer_name', 'acls.id as acl_id', 'acl_contents.locks as acl_locks', 'acl_contents.users as acl_users', 'okm_polls.polls']);

type OwnedOkmRow = OkmRow & {
  customer_name: string | null;
  acl_id: string | null;
  acl_locks: string | null;
  acl_users: string | null;
  /** okm_polls.polls: the number of the OKM's last poll; null: it never polled. */
  polls: number | null;
};

/**
 * The stuck columns as the poll wrote them, with the polls sent the correction counted the
 * poll's own way up to the last one (okm_polls.polls moves on every poll; the okms row does not).
 */
function stuckOf(row: OwnedOkmRow): OkmStuck | null {
  if (!isStuck(row)) return null;
  const record = correctionRecordOf(row);
  const resolver = row.stuck_resolver!;
  return { resolver, since: Number(row.stuck_since), polls: pollsSentWithoutEffect(record, resolver, Number(row.polls ?? 0)) };
}

/** A linked OKM's lists are its ACL's locks and users. */
function toOwnedOkm(row: OwnedOkmRow): OwnedOkm {
  const { customer_name, acl_id, acl_locks, acl_users } = row;
  const okm = toOkm(row);
  if (acl_id !== null) {
    okm.assetList = JSON.parse(acl_locks!) as unknown[];
    okm.usersAssets = JSON.parse(acl_users!) as unknown[];
    okm.usersAssetsJson = acl_users!;
  }
  return { okm, customerName: customer_name, aclId: acl_id, stuck: stuckOf(row) };
}

/**
 * One page of the OKMs that match, by serial number, after the cursor's serial number. The
 * page's serial numbers are a range of the index that starts with the filter's equality
 * columns and ends with the serial number (okms_customer_idx, okms_firmware_idx,
 * okms_customer_firmware_idx, okms_drifting_idx, the primary key…), entered at the cursor, so
 * a page deep in the list costs what the first does; only they are then read with their
 * customer and ACL (a deferred join). No total: the fleet summary counts the states.
 */
export async function listOkms(db: Db, filter: OkmListFilter, page: CursorPageRequest<[string]>): Promise<CursorPage<OwnedOkm>> {
  const rows = await selectOwnedOkms(db).where('okms.serial_number', 'in', pageSerialNumbers(db, filter, page)).orderBy('okms.serial_number').execute();
  return OKM_PAGES.page(rows.map(toOwnedOkm), page.limit, (owned) => [owned.okm.serialNumber]);
}

/**
 * The serial numbers of the page. By subscriber URL, the walk is of okm_subscriber_urls_url_idx
 * (url, serial_number) from the cursor, each OKM then tested against the other filters by its
 * primary key: the URL's OKMs are few beside the fleet, and the walk never reads another URL's.
 * A customer's page may pass over other customers' OKMs of the same URL, never list them.
 */
function pageSerialNumbers(db: Db, filter: OkmListFilter, page: CursorPageRequest<[string]>) {
  if (filter.subscriberUrl !== undefined) {
    let bySubscriber = db
      .selectFrom('okm_subscriber_urls')
      .innerJoin('okms', 'okms.serial_number', 'okm_subscriber_urls.serial_number')
      .select('okm_subscriber_urls.serial_number')
      .where('okm_subscriber_urls.url', '=', filter.subscriberUrl)
      .where((eb) => listConditions(eb, filter))
      .orderBy('okm_subscriber_urls.serial_number')
      .limit(page.limit + 1);
    if (page.after !== undefined) bySubscriber = bySubscriber.where(afterKey(['okm_subscriber_urls.serial_number'], page.after));
    return bySubscriber;
  }
  let pageSerials = db
    .selectFrom('okms')
    .select('okms.serial_number')
    .where((eb) => listConditions(eb, filter))
    .orderBy('okms.serial_number')
    .limit(page.limit + 1);
  if (page.after !== undefined) pageSerials = pageSerials.where(afterKey(['okms.serial_number'], page.after));
  return pageSerials;
}

export async function findOwnedOkm(db: Db, serialNumber: string): Promise<OwnedOkm | undefined> {
  const row = await selectOwnedOkms(db).where('okms.serial_number', '=', serialNumber).executeTakeFirst();
  return row && toOwnedOkm(row);
}

/**
 * Takes the OKM's row lock for the rest of the transaction (a no-op update, which works on
 * every supported database, unlike SELECT … FOR UPDATE on SQLite), so that concurrent
 * read-modify-write requests on one OKM apply one after the other. False: no such OKM.
 */
export async function lockOkm(db: Db, serialNumber: string): Promise<boolean> {
  const result = await db
    .updateTable('okms')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('serial_number', '=', serialNumber)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function setOkmCustomer(db: Db, serialNumber: string, customerId: number | null, now: number): Promise<void> {
  await db.updateTable('okms').set({ customer_id: customerId, updated_at: now }).where('serial_number', '=', serialNumber).execute();
}

/** Deletes the OKM's buffered messages (pending and delivered) and its audit records. */
export async function deleteOkmHistory(db: Db, serialNumber: string): Promise<void> {
  await db.deleteFrom('okm_messages').where('okm_serial', '=', serialNumber).execute();
  await db.deleteFrom('okm_audit_records').where('okm_serial', '=', serialNumber).execute();
}

/**
 * The serial numbers of the OKMs that match, in order, at most `limit` + 1 of them (so that a
 * caller bounded to `limit` sees there are more): the list's own walk (a bulk action's selection).
 */
export async function matchingSerialNumbers(db: Db, filter: OkmListFilter, limit: number): Promise<string[]> {
  const rows = await pageSerialNumbers(db, filter, { limit, after: undefined }).execute();
  return rows.map((row) => row.serial_number);
}
