import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';

/** The fleet event types (contract §14), in the order the docs list them. */
export const FLEET_EVENT_TYPES = [
  'okm.enrolled',
  'okm.overdue',
  'okm.back_online',
  'okm.stuck',
  'okm.unstuck',
  'okm.pending',
  'rollout.started',
  'rollout.group_started',
  'rollout.paused',
  'rollout.finished',
  'rollout.aborted',
  'subscriber.failing',
  'audit.entry',
] as const;
export type FleetEventType = (typeof FLEET_EVENT_TYPES)[number];

/** Event types only deployment-wide endpoints receive (they concern OKMs no customer holds yet). */
export const DEPLOYMENT_ONLY_EVENT_TYPES: ReadonlySet<FleetEventType> = new Set(['okm.pending']);

/** What a webhook body carries (contract §6 and §14): the same shape for status and fleet events. */
export interface WebhookEvent {
  id: string;
  type: string;
  timestamp: string;
  data: unknown;
}

export interface FleetEvent {
  type: FleetEventType;
  /** The customer the event concerns (its endpoints receive it); null: only deployment-wide endpoints. */
  customerId: number | null;
  data: Record<string, unknown>;
}

/** A new webhook-id: every delivery of one event (to each endpoint, each attempt) carries the same. */
export const newEventId = () => `msg_${randomUUID().replaceAll('-', '')}`;

/**
 * How long a process trusts its list of endpoints before reading it again. An endpoint created
 * in this process is seen at once (the list is dropped); one created through another process
 * receives the events emitted from at most this long after its creation.
 */
export const ENDPOINT_LIST_TTL_MS = 2_000;

interface EndpointSubscription {
  id: number;
  customerId: number | null;
  eventTypes: ReadonlySet<string>;
}

interface EndpointList {
  endpoints: EndpointSubscription[];
  readAt: number;
}

/**
 * Per database (keyed by its dialect adapter, which a handle shares with its transactions):
 * every endpoint's id, customer and event types, read whole (a deployment has few endpoints),
 * and a generation that endpoint changes in this process bump, so that a list read before a
 * change is not kept after it.
 */
const listsByDatabase = new WeakMap<object, { list?: EndpointList; generation: number }>();

function cacheOf(db: Db) {
  const adapter = db.getExecutor().adapter;
  let cache = listsByDatabase.get(adapter);
  if (!cache) listsByDatabase.set(adapter, (cache = { generation: 0 }));
  return cache;
}

/** Called after an endpoint is created or deleted in this process (after its commit). */
export function endpointsChanged(db: Db): void {
  const cache = cacheOf(db);
  cache.generation++;
  delete cache.list;
}

async function endpointList(db: Db, now: number): Promise<EndpointSubscription[]> {
  const cache = cacheOf(db);
  if (cache.list && now - cache.list.readAt < ENDPOINT_LIST_TTL_MS) return cache.list.endpoints;
  const generation = cache.generation;
  const rows = await db.selectFrom('webhook_endpoints').select(['id', 'customer_id', 'event_types']).execute();
  const endpoints = rows.map((row) => ({ id: row.id, customerId: row.customer_id, eventTypes: new Set(JSON.parse(row.event_types) as string[]) }));
  if (cache.generation === generation) cache.list = { endpoints, readAt: now };
  return endpoints;
}

/** The endpoints that receive an event: the customer's, and the deployment-wide ones, subscribed to its type. */
function subscribers(endpoints: readonly EndpointSubscription[], event: Pick<FleetEvent, 'type' | 'customerId'>): number[] {
  return endpoints
    .filter((endpoint) => endpoint.eventTypes.has(event.type) && (endpoint.customerId === null || endpoint.customerId === event.customerId))
    .map((endpoint) => endpoint.id);
}

/** The body an event is delivered with. */
export function eventBody(id: string, type: string, at: number, data: unknown): WebhookEvent {
  return { id, type, timestamp: new Date(at).toISOString(), data };
}

/**
 * Queues one delivery of the event per endpoint that receives it, in the caller's transaction
 * (the event commits or is lost with what it reports); the dispatcher delivers them. An event
 * nobody subscribes to costs no statement while the endpoint list is fresh. Returns how many
 * deliveries were queued.
 */
export async function emitFleetEvent(db: Db, event: FleetEvent, now = Date.now()): Promise<number> {
  return emitFleetEvents(db, [event], now);
}

/**
 * Queues a set of events (a sweep's) as emitFleetEvent does each, in as few statements as
 * their deliveries fill: QUEUED_ROWS_PER_STATEMENT deliveries per multi-row INSERT.
 */
export async function emitFleetEvents(db: Db, events: readonly FleetEvent[], now = Date.now()): Promise<number> {
  if (events.length === 0) return 0;
  const endpoints = await endpointList(db, now);
  const deliveries: QueuedDelivery[] = [];
  for (const event of events) {
    const endpointIds = subscribers(endpoints, event);
    if (endpointIds.length === 0) continue;
    const body = eventBody(newEventId(), event.type, now, event.data);
    for (const endpointId of endpointIds) deliveries.push({ endpointId, body });
  }
  return queueDeliveries(db, deliveries, now);
}

/** Whether any endpoint, of any customer or deployment-wide, subscribes to the type; no statement while the endpoint list is fresh. */
export async function anyEndpointSubscribes(db: Db, type: FleetEventType, now: number): Promise<boolean> {
  return (await endpointList(db, now)).some((endpoint) => endpoint.eventTypes.has(type));
}

/** The ids of the endpoints an event would be queued to; no statement while the endpoint list is fresh. */
export async function fleetEventSubscribers(db: Db, event: Pick<FleetEvent, 'type' | 'customerId'>, now: number): Promise<number[]> {
  return subscribers(await endpointList(db, now), event);
}

export interface QueuedDelivery {
  endpointId: number;
  body: WebhookEvent;
}

/** Deliveries one INSERT queues at most (4 parameters each: well within both databases' limits). */
export const QUEUED_ROWS_PER_STATEMENT = 1000;

/**
 * Queues each built event to its endpoint, if that endpoint still exists: the INSERT reads
 * the endpoints table itself (so one deleted meanwhile receives nothing) joined to the
 * deliveries as a VALUES list. The values are cast so that PostgreSQL knows their types.
 */
export async function queueDeliveries(db: Db, deliveries: readonly QueuedDelivery[], now: number): Promise<number> {
  let queued = 0;
  for (let start = 0; start < deliveries.length; start += QUEUED_ROWS_PER_STATEMENT) {
    const rows = deliveries
      .slice(start, start + QUEUED_ROWS_PER_STATEMENT)
      .map(({ endpointId, body }) => sql`(cast(${endpointId} as bigint), cast(${body.id} as text), cast(${body.type} as text), cast(${JSON.stringify(body)} as text))`);
    const incoming = sql<{ column1: number; column2: string; column3: string; column4: string }>`(values ${sql.join(rows)})`.as('incoming');
    const result = await db
      .insertInto('fleet_event_deliveries')
      .columns(['endpoint_id', 'customer_id', 'url', 'host', 'event_id', 'event_type', 'payload', 'state', 'attempts', 'next_attempt_at', 'created_at'])
      .expression((eb) =>
        eb
          .selectFrom('webhook_endpoints')
          .innerJoin(incoming, 'incoming.column1', 'webhook_endpoints.id')
          .select((select) => [
            'webhook_endpoints.id',
            'webhook_endpoints.customer_id',
            'webhook_endpoints.url',
            'webhook_endpoints.host',
            'incoming.column2 as event_id',
            'incoming.column3 as event_type',
            'incoming.column4 as payload',
            select.val('pending').as('state'),
            select.cast<number>(select.val(0), 'integer').as('attempts'),
            select.cast<number>(select.val(now), 'bigint').as('next_attempt_at'),
            select.cast<number>(select.val(now), 'bigint').as('created_at'),
          ]),
      )
      .executeTakeFirst();
    queued += Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  return queued;
}
