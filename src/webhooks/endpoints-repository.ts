import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { endpointsChanged } from './fleet-events.ts';

export interface WebhookEndpoint {
  id: number;
  customerId: number | null;
  customerName: string | null;
  url: string;
  eventTypes: string[];
  createdAt: number;
}

/** Which endpoints a request may see: one customer's, or (undefined) every endpoint. */
export interface EndpointScope {
  customerId?: number | null;
}

const selectEndpoints = (db: Db) =>
  db
    .selectFrom('webhook_endpoints')
    .leftJoin('customers', 'customers.id', 'webhook_endpoints.customer_id')
    .select(['webhook_endpoints.id', 'webhook_endpoints.customer_id', 'customers.name as customer_name', 'webhook_endpoints.url', 'webhook_endpoints.event_types', 'webhook_endpoints.created_at']);

type EndpointRow = Awaited<ReturnType<ReturnType<typeof selectEndpoints>['executeTakeFirstOrThrow']>>;

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  customerId: row.customer_id,
  customerName: row.customer_name,
  url: row.url,
  eventTypes: JSON.parse(row.event_types) as string[],
  createdAt: row.created_at,
});

function scoped<Query extends ReturnType<typeof selectEndpoints>>(query: Query, scope: EndpointScope): Query {
  if (scope.customerId === undefined) return query;
  return (scope.customerId === null ? query.where('webhook_endpoints.customer_id', 'is', null) : query.where('webhook_endpoints.customer_id', '=', scope.customerId)) as Query;
}

/**
 * Inserts an endpoint. The endpoint lists of this process are dropped here, which is enough
 * outside a transaction; inside one, the caller drops them again after the commit
 * (endpointsChanged), as a list read while the transaction ran lacks the endpoint.
 */
export async function insertEndpoint(db: Db, endpoint: { customerId: number | null; url: string; eventTypes: readonly string[]; now: number }): Promise<number> {
  const row = await db
    .insertInto('webhook_endpoints')
    .values({
      customer_id: endpoint.customerId,
      url: endpoint.url,
      host: new URL(endpoint.url).host,
      event_types: JSON.stringify(endpoint.eventTypes),
      created_at: endpoint.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  endpointsChanged(db);
  return row.id;
}

/**
 * Holds the endpoint's row lock until the transaction `tx` ends (a write that changes nothing),
 * so that what it reads of the endpoint next is what its change starts from; false: no such
 * endpoint.
 */
export async function lockEndpoint(tx: Db, id: number): Promise<boolean> {
  const row = await tx
    .updateTable('webhook_endpoints')
    .set((eb) => ({ url: eb.ref('url') }))
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Changes an endpoint's URL and/or event types, in the caller's transaction `tx` (the caller
 * drops the endpoint lists after its commit: endpointsChanged). Its deliveries still pending
 * follow the new URL (an operator moving a receiver wants the queued events there, not at the
 * old address).
 */
export async function updateEndpoint(tx: Db, id: number, changes: { url?: string; eventTypes?: readonly string[] }): Promise<void> {
  const target = changes.url === undefined ? {} : { url: changes.url, host: new URL(changes.url).host };
  await tx
    .updateTable('webhook_endpoints')
    .set({ ...target, ...(changes.eventTypes === undefined ? {} : { event_types: JSON.stringify(changes.eventTypes) }) })
    .where('id', '=', id)
    .execute();
  if (changes.url !== undefined) await tx.updateTable('fleet_event_deliveries').set(target).where('endpoint_id', '=', id).where('state', '=', 'pending').execute();
}

export async function countEndpoints(db: Db, scope: EndpointScope): Promise<number> {
  const row = await scoped(selectEndpoints(db), scope)
    .clearSelect()
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Webhook endpoints page by id, oldest first. */
export const ENDPOINT_PAGES = cursorList<[id: number]>('webhook-endpoints', ['integer']);

/**
 * One page of the endpoints in scope, oldest first, after the cursor's id: a range of
 * webhook_endpoints_customer_idx (customer_id, id) for one owner's, of the primary key for
 * every endpoint.
 */
export async function listEndpoints(db: Db, scope: EndpointScope, page: CursorPageRequest<[number]>): Promise<CursorPage<WebhookEndpoint>> {
  let rows = scoped(selectEndpoints(db), scope).orderBy('webhook_endpoints.id').limit(page.limit + 1);
  if (page.after !== undefined) rows = rows.where(afterKey(['webhook_endpoints.id'], page.after));
  return ENDPOINT_PAGES.page((await rows.execute()).map(toEndpoint), page.limit, (endpoint) => [endpoint.id]);
}

export async function findEndpoint(db: Db, id: number, scope: EndpointScope): Promise<WebhookEndpoint | undefined> {
  const row = await scoped(selectEndpoints(db), scope).where('webhook_endpoints.id', '=', id).executeTakeFirst();
  return row && toEndpoint(row);
}

/**
 * Deletes the endpoint with its queued and logged deliveries, in the caller's transaction (the
 * caller drops the endpoint lists after its commit: endpointsChanged); returns it as it was
 * when deleted, undefined when none in scope has that id.
 */
export async function deleteEndpoint(db: Db, id: number, scope: EndpointScope): Promise<WebhookEndpoint | undefined> {
  const endpoint = await findEndpoint(db, id, scope);
  if (!endpoint) return undefined;
  const deleted = await db.deleteFrom('webhook_endpoints').where('id', '=', id).returning(['url', 'event_types']).executeTakeFirst();
  return deleted && { ...endpoint, url: deleted.url, eventTypes: JSON.parse(deleted.event_types) as string[] };
}
