import { sql, type SqlBool } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { retryPolicyFromWire, retryPolicyToWire, type RetryPolicy, type RetryPolicyWire } from '../shared/retry-policy.ts';
import { isTimeZone } from '../shared/time-zone.ts';

export interface Customer {
  id: number;
  name: string;
}

const CUSTOMER_NAME = new RegExp(CUSTOMER_NAME_PATTERN);

export function isValidCustomerName(name: string): boolean {
  return CUSTOMER_NAME.test(name);
}

/** A time zone that is not IANA's is a 400. */
export function checkTimeZone(timeZone: string | null): void {
  if (timeZone !== null && !isTimeZone(timeZone)) throw badRequest(`time_zone: expected an IANA time zone such as Europe/Berlin, got "${timeZone}"`);
}

/** Creates a customer; a malformed name or time zone is a 400, a name already taken a 409. */
export async function createCustomer(db: Db, name: string, timeZone: string | null = null): Promise<Customer> {
  if (!isValidCustomerName(name)) {
    throw badRequest(`name: expected 1-64 characters of A-Z a-z 0-9 . _ -, got "${name}"`);
  }
  checkTimeZone(timeZone);
  const created = await db
    .insertInto('customers')
    .values({ name, created_at: Date.now(), time_zone: timeZone })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning(['id', 'name'])
    .executeTakeFirst();
  if (!created) throw conflict(`customer ${name} already exists`);
  return created;
}

export async function findCustomerByName(db: Db, name: string): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('name', '=', name).executeTakeFirst();
}

export async function findCustomerById(db: Db, id: number): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
}

/** Sets the customer's time zone (its stores' local time: rollout maintenance windows); null: UTC. */
export async function setCustomerTimeZone(db: Db, name: string, timeZone: string | null): Promise<void> {
  checkTimeZone(timeZone);
  const result = await db.updateTable('customers').set({ time_zone: timeZone }).where('name', '=', name).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw notFound(`customer ${name} not found`);
}

/** The retry policies of firmware offers of these customers that have their own (SPEC section 15), by id. */
export async function findRetryPolicies(db: Db, customerIds: readonly number[]): Promise<Map<number, RetryPolicy>> {
  if (customerIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('customers')
    .select(['id', 'firmware_retry_policy'])
    .where('id', 'in', [...customerIds])
    .where('firmware_retry_policy', 'is not', null)
    .execute();
  return new Map(rows.map((row) => [Number(row.id), retryPolicyFromWire(JSON.parse(row.firmware_retry_policy!) as RetryPolicyWire)]));
}

/** Sets the customer's retry policy of firmware offers; null: the fleet default. */
export async function setCustomerRetryPolicy(db: Db, name: string, policy: RetryPolicy | null): Promise<void> {
  const stored = policy === null ? null : JSON.stringify(retryPolicyToWire(policy));
  const result = await db.updateTable('customers').set({ firmware_retry_policy: stored }).where('name', '=', name).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw notFound(`customer ${name} not found`);
}

/** The customer list pages by name, which the customers' unique index holds. */
export const CUSTOMER_PAGES = cursorList<[name: string]>('customers', ['string']);

/** What the customer list is held to: one customer (a customer's principal), and a piece of the name. */
export interface CustomerListFilter {
  /** Only this customer (a customer-bound principal sees its own only). */
  id?: number;
  /** Names that contain this text, whatever its case (the picker's search as you type). */
  nameContains?: string;
}

/** A LIKE pattern that matches `text` anywhere, its own % _ and \ taken literally (with ESCAPE '\'). */
const likeContaining = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

/**
 * One page of customers by name, after the cursor's. Without a search the page is a range of
 * the unique index on name entered at the cursor; a search compares lower() of both sides (names
 * are ASCII, which lower() folds alike on both databases) and walks that index from the cursor
 * until the page is full: it reads customers, never OKMs, ACLs or locks.
 */
export async function listCustomers(db: Db, filter: CustomerListFilter, page: CursorPageRequest<[string]>): Promise<CursorPage<Customer>> {
  let query = db.selectFrom('customers').select(['id', 'name']).orderBy('name').limit(page.limit + 1);
  if (filter.id !== undefined) query = query.where('id', '=', filter.id);
  if (filter.nameContains !== undefined) {
    query = query.where(sql<SqlBool>`lower(${sql.ref('name')}) LIKE ${likeContaining(filter.nameContains.toLowerCase())} ESCAPE '\\'`);
  }
  if (page.after !== undefined) query = query.where(afterKey(['name'], page.after));
  const rows = await query.execute();
  return CUSTOMER_PAGES.page(
    rows.map((row) => ({ id: Number(row.id), name: row.name })),
    page.limit,
    (customer) => [customer.name],
  );
}
