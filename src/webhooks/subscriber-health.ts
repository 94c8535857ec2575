import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { eventBody, fleetEventSubscribers, newEventId, queueDeliveries } from './fleet-events.ts';

/** A subscriber URL whose deliveries are failing, over the OKMs that subscribe to it. */
export interface FailingSubscriber {
  url: string;
  /** OKMs whose last delivery to the URL failed for good or is being retried. */
  okms: number;
  /** Of those, the ones whose attempts ran out ('failed'); the rest are retrying. */
  failed: number;
  /** The newest failed attempt among them. */
  lastAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
}

export const FAILING_SUBSCRIBERS_LIMIT = 20;

/**
 * The subscriber URLs with failing deliveries (state 'failed', or 'pending' after at least one
 * attempt), most OKMs first, with the newest attempt's outcome: one pass over the failing rows,
 * numbered per URL by a window function (both dialects have them).
 */
export async function failingSubscribers(db: Db, customerId: number | undefined): Promise<FailingSubscriber[]> {
  const failing = db
    .selectFrom('status_events')
    .select((eb) => [
      'status_events.url',
      'status_events.last_attempt_at',
      'status_events.last_status_code',
      'status_events.last_error',
      sql<number | string>`count(*) over (partition by status_events.url)`.as('okms'),
      sql<number | string>`sum(case when status_events.state = 'failed' then 1 else 0 end) over (partition by status_events.url)`.as('failed'),
      sql<number | string>`row_number() over (partition by status_events.url order by coalesce(status_events.last_attempt_at, 0) desc, status_events.id desc)`.as('newest'),
      eb.ref('status_events.id').as('id'),
    ])
    .where((eb) => eb.or([eb('status_events.state', '=', 'failed'), eb.and([eb('status_events.state', '=', 'pending'), eb('status_events.attempts', '>', 0)])]))
    .$if(customerId !== undefined, (query) =>
      query.innerJoin('okms', 'okms.serial_number', 'status_events.okm_serial').where('okms.customer_id', '=', customerId!),
    );
  const rows = await db
    .selectFrom(failing.as('failing'))
    .select(['url', 'okms', 'failed', 'last_attempt_at', 'last_status_code', 'last_error'])
    .where('newest', '=', 1)
    .orderBy('okms', 'desc')
    .orderBy('url')
    .limit(FAILING_SUBSCRIBERS_LIMIT)
    .execute();
  return rows.map((row) => ({
    url: row.url,
    okms: Number(row.okms),
    failed: Number(row.failed),
    lastAttemptAt: row.last_attempt_at === null ? null : Number(row.last_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
  }));
}

/** A status event whose delivery to a subscriber URL has used every retry (logged in status_delivery_failures). */
export interface ExhaustedDelivery {
  okmSerial: string;
  customerId: number | null;
  url: string;
  /** The status event's webhook-id. */
  eventId: string;
  attempts: number;
  attemptedAt: number;
  statusCode: number | null;
  error: string;
}

/**
 * Emits subscriber.failing once per URL (and customer) per failing period: not when an
 * earlier exhausted delivery to the URL, of an OKM of the same customer, was reported and the
 * URL has accepted no delivery since, as seen on the status rows of that earlier OKM and of
 * this one (read by their unique key). Costs nothing when no endpoint takes the event.
 */
export async function emitSubscriberFailing(db: Db, failure: ExhaustedDelivery): Promise<number> {
  const event = { type: 'subscriber.failing', customerId: failure.customerId } as const;
  const endpointIds = await fleetEventSubscribers(db, event, failure.attemptedAt);
  if (endpointIds.length === 0 || (await stillFailingSinceReported(db, failure))) return 0;
  const data = { serial_number: failure.okmSerial, url: failure.url, attempts: failure.attempts, last_status_code: failure.statusCode, last_error: failure.error };
  const body = eventBody(newEventId(), event.type, failure.attemptedAt, data);
  return queueDeliveries(
    db,
    endpointIds.map((endpointId) => ({ endpointId, body })),
    failure.attemptedAt,
  );
}

async function stillFailingSinceReported(db: Db, failure: ExhaustedDelivery): Promise<boolean> {
  const previous = await db
    .selectFrom('status_delivery_failures')
    .innerJoin('okms', 'okms.serial_number', 'status_delivery_failures.okm_serial')
    .select(['status_delivery_failures.okm_serial', 'status_delivery_failures.attempted_at'])
    .where('status_delivery_failures.url', '=', failure.url)
    .where('status_delivery_failures.outcome', '=', 'failed')
    .where('status_delivery_failures.event_id', '!=', failure.eventId)
    .where('okms.customer_id', failure.customerId === null ? 'is' : '=', failure.customerId)
    .orderBy('status_delivery_failures.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!previous) return false;
  const deliveredSince = await db
    .selectFrom('status_events')
    .select('id')
    .where('url', '=', failure.url)
    .where('okm_serial', 'in', [previous.okm_serial, failure.okmSerial])
    .where('delivered_at', '>', previous.attempted_at)
    .executeTakeFirst();
  return deliveredSince === undefined;
}
