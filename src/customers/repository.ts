import { sql, type SqlBool } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { retryPolicyFromWire, retryPolicyToWire, type RetryPolicy, type RetryPolicyWire } from '../shared/retry-policy.ts';

export interface Customer {
  id: number;
  name: string;
}

/**
 * Stores a new customer, its name and time zone as given (createCustomer in ./service.ts
 * checks them); undefined when the name is taken.
 */
export async function insertCustomer(db: Db, name: string, timeZone: string | null): Promise<Customer | undefined> {
  return db
    .insertInto('customers')
    .values({ name, created_at: Date.now(), time_zone: timeZone })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning(['id', 'name'])
    .executeTakeFirst();
}

export async function findCustomerByName(db: Db, name: string): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('name', '=', name).executeTakeFirst();
}

export async function findCustomerById(db: Db, id: number): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
}

/**
 * Sets the customer's time zone (its stores' local time: rollout maintenance windows), an IANA
 * name the caller checked; null: UTC. False when no customer has that name.
 */
export async function setCustomerTimeZone(db: Db, name: string, timeZone: string | null): Promise<boolean> {
  const result = await db.updateTable('customers').set({ time_zone: timeZone }).where('name', '=', name).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The retry policies of firmware offers of these customers that have their own (contract §15.2), by id. */
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

/** Sets the customer's retry policy of firmware offers; null: the fleet default. False when no customer has that name. */
export async function setCustomerRetryPolicy(db: Db, name: string, policy: RetryPolicy | null): Promise<boolean> {
  const stored = policy === null ? null : JSON.stringify(retryPolicyToWire(policy));
  const result = await db.updateTable('customers').set({ firmware_retry_policy: stored }).where('name', '=', name).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
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
