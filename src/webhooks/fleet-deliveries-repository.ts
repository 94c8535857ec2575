import type { Selectable } from 'kysely';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { FleetEventDeliveriesTable } from '../db/schema.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import type { WebhookEvent } from './fleet-events.ts';
import { dueRowIds, PENDING, type AttemptRecord, type ClaimRequest } from './queue-repository.ts';

/** A claimed fleet-event delivery: the body as queued, and where it goes. */
export interface ClaimedFleetDelivery {
  kind: 'fleet';
  id: number;
  url: string;
  host: string;
  eventId: string;
  event: WebhookEvent;
  attempts: number;
  /** Whose secret signs: the endpoint's customer; null: the deployment's. */
  customerId: number | null;
}

/** Takes due fleet-event deliveries of one host, as claimDueEvents does status events. */
export async function claimDueFleetDeliveries(db: Db, dialect: DialectStrategy, claim: ClaimRequest): Promise<ClaimedFleetDelivery[]> {
  const rows = await db
    .with((cte) => cte('due').materialized(), () => dueRowIds(db, dialect, 'fleet_event_deliveries', claim))
    .updateTable('fleet_event_deliveries')
    .set({ claim_token: claim.token, claimed_until: claim.claimedUntil })
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .returning(['id', 'url', 'host', 'event_id', 'payload', 'attempts', 'customer_id'])
    .execute();
  return rows.map((row) => ({
    kind: 'fleet' as const,
    id: row.id,
    url: row.url,
    host: row.host,
    eventId: row.event_id,
    event: JSON.parse(row.payload) as WebhookEvent,
    attempts: row.attempts,
    customerId: row.customer_id,
  }));
}

/** Gives back claimed deliveries untouched. */
export async function releaseFleetClaims(db: Db, ids: readonly number[], token: string): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('fleet_event_deliveries').set({ claim_token: null, claimed_until: null }).where('id', 'in', ids).where('claim_token', '=', token).execute();
}

/**
 * Writes the outcomes of fleet-event attempts, one transaction for the batch (fleet events are
 * few: a row per event and endpoint, never rewritten by polls). Only the claim's holder writes.
 */
export async function recordFleetAttempts(db: Db, dialect: DialectStrategy, records: readonly AttemptRecord<ClaimedFleetDelivery>[]): Promise<void> {
  if (records.length === 0) return;
  await db.transaction().execute(async (tx) => {
    // A lost outcome means the event is sent again: at least once.
    await dialect.relaxCommitDurability(tx);
    for (const { event, token, attemptedAt, outcome } of records) {
      await tx
        .updateTable('fleet_event_deliveries')
        .set({
          state: outcome.kind === 'retrying' ? PENDING : outcome.kind,
          attempts: event.attempts + 1,
          ...(outcome.kind === 'retrying' ? { next_attempt_at: outcome.nextAttemptAt } : {}),
          ...(outcome.kind === 'delivered' ? { delivered_at: attemptedAt, last_error: null } : { last_error: outcome.error }),
          claim_token: null,
          claimed_until: null,
          last_attempt_at: attemptedAt,
          last_status_code: outcome.statusCode,
        })
        .where('id', '=', event.id)
        .where('claim_token', '=', token)
        .execute();
    }
  });
}

/** Removes finished deliveries (delivered, failed, gone) queued before `before`; pending ones stay. */
export async function pruneFleetDeliveries(db: Db, before: number): Promise<void> {
  await db.deleteFrom('fleet_event_deliveries').where('created_at', '<', before).where('state', '!=', PENDING).execute();
}

/** An endpoint's deliveries page by id, newest first. */
export const ENDPOINT_DELIVERY_PAGES = cursorList<[id: number]>('webhook-endpoint-deliveries', ['integer']);

/**
 * One page of an endpoint's deliveries, newest first, before the cursor's id: a range of
 * fleet_event_deliveries_endpoint_idx (endpoint_id, id) walked backwards from the cursor.
 */
export async function endpointDeliveries(db: Db, endpointId: number, page: CursorPageRequest<[number]>): Promise<CursorPage<Selectable<FleetEventDeliveriesTable>>> {
  let rows = db.selectFrom('fleet_event_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(page.limit + 1);
  if (page.after !== undefined) rows = rows.where(afterKey(['id'], page.after, 'desc'));
  return ENDPOINT_DELIVERY_PAGES.page(await rows.execute(), page.limit, (row) => [row.id]);
}

/** One delivery of an endpoint; undefined when the endpoint has no delivery of that id (another's, or pruned). */
export async function findEndpointDelivery(db: Db, endpointId: number, deliveryId: number): Promise<Selectable<FleetEventDeliveriesTable> | undefined> {
  return db.selectFrom('fleet_event_deliveries').selectAll().where('id', '=', deliveryId).where('endpoint_id', '=', endpointId).executeTakeFirst();
}

/**
 * The newest delivery of one event to one endpoint that is still pending (the original being
 * retried, or a redelivery queued and not attempted to its end yet): a range of the endpoint
 * index, read backwards, filtered on the event (an endpoint's deliveries of one event are few).
 */
export async function pendingDeliveryOfEvent(db: Db, endpointId: number, eventId: string): Promise<Selectable<FleetEventDeliveriesTable> | undefined> {
  return db
    .selectFrom('fleet_event_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '=', eventId)
    .where('state', '=', PENDING)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Endpoints a failing-endpoints read lists at most. */
export const FAILING_ENDPOINTS_LIMIT = 50;

export interface FailingEndpointRow {
  id: number;
  url: string;
  customer_name: string | null;
  event_type: string;
  state: FleetEventDeliveriesTable['state'];
  attempts: number;
  last_attempt_at: number;
  last_status_code: number | null;
  last_error: string;
}

/**
 * The endpoints in scope (one customer's, or every endpoint) whose newest attempted delivery
 * did not get through: it is being retried, used every retry, or was answered 410. The newest
 * attempted delivery of each endpoint is found backwards along its index (endpoint_id, id),
 * past the few fresh deliveries not attempted yet. Most recently failing first.
 */
export async function failingEndpoints(db: Db, customerId: number | null | undefined): Promise<FailingEndpointRow[]> {
  let query = db
    .selectFrom('webhook_endpoints')
    .leftJoin('customers', 'customers.id', 'webhook_endpoints.customer_id')
    .innerJoin('fleet_event_deliveries as last', (join) =>
      join.on('last.id', '=', (eb) =>
        eb
          .selectFrom('fleet_event_deliveries as attempted')
          .select((select) => select.fn.max('attempted.id').as('id'))
          .whereRef('attempted.endpoint_id', '=', 'webhook_endpoints.id')
          .where('attempted.last_attempt_at', 'is not', null),
      ),
    )
    .select([
      'webhook_endpoints.id',
      'webhook_endpoints.url',
      'customers.name as customer_name',
      'last.event_type',
      'last.state',
      'last.attempts',
      'last.last_attempt_at',
      'last.last_status_code',
      'last.last_error',
    ])
    .where('last.last_error', 'is not', null)
    .orderBy('last.last_attempt_at', 'desc')
    .orderBy('webhook_endpoints.id')
    .limit(FAILING_ENDPOINTS_LIMIT);
  if (customerId !== undefined) query = customerId === null ? query.where('webhook_endpoints.customer_id', 'is', null) : query.where('webhook_endpoints.customer_id', '=', customerId);
  const rows = await query.execute();
  return rows.map((row) => ({ ...row, last_attempt_at: Number(row.last_attempt_at), last_error: row.last_error! }));
}
