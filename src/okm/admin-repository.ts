import { sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/database.ts';
import { pagePosition, scopeTotal, type BucketedList } from '../db/page-buckets.ts';
import { ALL_SCOPE, BUCKETED_STATES, customerScope, firmwareScope, OKM_FIRMWARE_LIST, OKM_LIST, OKM_STATE_LIST, stateScope, UNASSIGNED_SCOPE, type BucketedState } from '../db/paged-lists.ts';
import type { Database } from '../db/schema.ts';
import { fleetStateCondition, type FleetState, type OverdueClock } from './fleet-states.ts';
import type { Okm } from './model.ts';
import { selectOkmRows, toOkm, type OkmRow } from './repository.ts';

/** An OKM with the name of the customer it belongs to and the ACL linked to it. */
export interface OwnedOkm {
  okm: Okm;
  customerName: string | null;
  /** The ACL whose locks and users are this OKM's asset lists, if one is linked. */
  aclId: string | null;
}

/** The orders of the OKM list: by serial number, or by last sync time (never polled first) with `-` for the reverse. */
export const OKM_SORTS = ['serial_number', 'last_sync_time', '-last_sync_time'] as const;
export type OkmSort = (typeof OKM_SORTS)[number];

export interface OkmListFilter extends OverdueClock {
  /** Only this customer's OKMs; undefined: every customer's. */
  customerId?: number;
  /** Only OKMs without a customer. */
  unassigned?: boolean;
  overdue?: boolean;
  firmwareVersion?: string;
  state?: FleetState;
  /** Only OKMs whose serial number begins with this (itself a valid serial number). */
  serialPrefix?: string;
}

export interface OkmPage {
  okms: OwnedOkm[];
  total: number;
}

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
  if (filter.overdue === true) conditions.push(fleetStateCondition('overdue', filter));
  if (filter.overdue === false) conditions.push(eb.not(fleetStateCondition('overdue', filter)));
  if (filter.state !== undefined) conditions.push(fleetStateCondition(filter.state, filter));
  if (filter.serialPrefix !== undefined) {
    conditions.push(eb('okms.serial_number', '>=', filter.serialPrefix));
    conditions.push(eb('okms.serial_number', '<', filter.serialPrefix + AFTER_EVERY_SERIAL_CHARACTER));
  }
  return eb.and(conditions);
}

/**
 * The order of a sort, with the serial number breaking ties; written out in full (NULLS FIRST
 * or LAST) so that both databases agree, and in the order of okms_(customer_)last_sync_idx.
 * `reversed`: the same order backwards (the same index, walked from its other end).
 */
function orderOf(sort: OkmSort, reversed = false): RawBuilder<unknown> {
  switch (sort) {
    case 'serial_number':
      return reversed ? sql`okms.serial_number desc` : sql`okms.serial_number`;
    case 'last_sync_time':
      return reversed ? orderOf('-last_sync_time') : sql`okms.last_sync_time asc nulls first, okms.serial_number asc`;
    case '-last_sync_time':
      return reversed ? orderOf('last_sync_time') : sql`okms.last_sync_time desc nulls last, okms.serial_number desc`;
  }
}

const selectOwnedOkms = (db: Db) =>
  selectOkmRows(db)
    .leftJoin('customers', 'customers.id', 'okms.customer_id')
    .leftJoin('acls', 'acls.okm_serial', 'okms.serial_number')
    .leftJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .select(['customers.name as customer_name', 'acls.id as acl_id', 'acl_contents.locks as acl_locks', 'acl_contents.users as acl_users']);

type OwnedOkmRow = OkmRow & {
  customer_name: string | null;
  acl_id: string | null;
  acl_locks: string | null;
  acl_users: string | null;
};

/** A linked OKM's lists are its ACL's locks and users. */
function toOwnedOkm({ customer_name, acl_id, acl_locks, acl_users, ...row }: OwnedOkmRow): OwnedOkm {
  const okm = toOkm(row);
  if (acl_id !== null) {
    okm.assetList = JSON.parse(acl_locks!) as unknown[];
    okm.usersAssets = JSON.parse(acl_users!) as unknown[];
  }
  return { okm, customerName: customer_name, aclId: acl_id };
}

/**
 * The page_buckets list and scope of a filter that is only a scope (one customer's OKMs, the
 * unassigned ones, the whole fleet), or only a scope and a firmware version, or a scope and a
 * state other than overdue; undefined for any other filter.
 */
function bucketScopeOf(filter: OkmListFilter): { list: BucketedList; scope: string } | undefined {
  if (filter.overdue !== undefined || filter.serialPrefix !== undefined) return undefined;
  if (filter.unassigned && filter.customerId !== undefined) return undefined;
  const customerId = filter.unassigned ? null : filter.customerId;
  if (filter.state !== undefined) {
    if (filter.firmwareVersion !== undefined || !isBucketedState(filter.state)) return undefined;
    return { list: OKM_STATE_LIST, scope: stateScope(filter.state, customerId) };
  }
  if (filter.firmwareVersion !== undefined) return { list: OKM_FIRMWARE_LIST, scope: firmwareScope(filter.firmwareVersion, customerId) };
  return { list: OKM_LIST, scope: customerId === undefined ? ALL_SCOPE : customerId === null ? UNASSIGNED_SCOPE : customerScope(customerId) };
}

const isBucketedState = (state: FleetState): state is BucketedState => (BUCKETED_STATES as readonly string[]).includes(state);

const matchingSerials = (db: Db, filter: OkmListFilter) =>
  db
    .selectFrom('okms')
    .select('okms.serial_number')
    .where((eb) => listConditions(eb, filter));

const countMatching = async (db: Db, filter: OkmListFilter) => {
  const count = await db
    .selectFrom('okms')
    .select((eb) => eb.fn.countAll<number | string>().as('total'))
    .where((eb) => listConditions(eb, filter))
    .executeTakeFirstOrThrow();
  return Number(count.total);
};

/** Index entries a walk passes in about a millisecond: a page this near the start is walked to from there, without waiting for the total. */
export const SHORT_WALK = 10_000;

/**
 * One page (from 1) of the OKMs that match, in the sort's order, and how many match in all.
 * The page's serial numbers come from an index alone (a deferred join), and only they are read
 * with their customer and ACL. A filter that is only a scope, or a scope and a firmware
 * version or a state other than overdue, reads its total from its page buckets
 * (page-buckets.ts), and in serial number order starts its walk at the bucket that holds the
 * page. Other filters count their matches, and
 * other orders walk an index: from its start to a page in the first half, from its end (the
 * reverse order) to a page in the second, so that no walk passes more than half the matches.
 */
export async function listOkms(db: Db, filter: OkmListFilter, sort: OkmSort, page: number, perPage: number): Promise<OkmPage> {
  const order = orderOf(sort);
  const offset = (page - 1) * perPage;
  const bucketed = bucketScopeOf(filter);
  let pageSerials = matchingSerials(db, filter).orderBy(order).limit(perPage);
  let total: Promise<number>;
  if (bucketed !== undefined && sort === 'serial_number') {
    const position = await pagePosition(db, bucketed.list, bucketed.scope, offset);
    if (position.from !== null) pageSerials = pageSerials.where('okms.serial_number', '>=', String(position.from));
    pageSerials = pageSerials.offset(position.skip);
    total = Promise.resolve(position.total);
  } else {
    total = bucketed === undefined ? countMatching(db, filter) : scopeTotal(db, bucketed.list, bucketed.scope);
    const matches = offset <= SHORT_WALK ? Infinity : await total;
    if (offset <= matches / 2) pageSerials = pageSerials.offset(offset);
    else {
      const onPage = Math.max(0, Math.min(perPage, matches - offset));
      pageSerials = matchingSerials(db, filter)
        .orderBy(orderOf(sort, true))
        .limit(onPage)
        .offset(Math.max(0, matches - offset - onPage));
    }
  }
  const [rows, count] = await Promise.all([selectOwnedOkms(db).where('okms.serial_number', 'in', pageSerials).orderBy(order).execute(), total]);
  return { okms: rows.map(toOwnedOkm), total: count };
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
