import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { StatusDeliveryFailuresTable, StatusEventState, StatusEventsTable } from '../db/schema.ts';

/** The status a poll reports to the OKM's subscribers. */
export interface PolledStatus {
  now: number;
  ip: string;
  firmwareVersion: string | null;
}

// Literal, not a parameter, so that SQLite can use the partial index on pending rows.
const PENDING = sql.lit<StatusEventState>('pending');

const newEventId = () => `msg_${randomUUID().replaceAll('-', '')}`;

const hostCache = new Map<string, string>();
/** host[:port] of a URL; the few distinct URLs of a fleet are parsed once. */
function hostOf(url: string): string {
  let host = hostCache.get(url);
  if (host === undefined) {
    if (hostCache.size >= 10_000) hostCache.clear();
    host = new URL(url).host;
    hostCache.set(url, host);
  }
  return host;
}

const SHARED_ARGS = 4;
const ARGS_PER_URL = 3;

/**
 * The upsert of one poll's events, one row per URL: a new row is due at once; a pending row
 * takes the newer status and event id but keeps its retry schedule (the subscriber is still
 * catching up or down); a delivered or failed row starts again; a URL that answered 410 stays
 * stopped. Built once per number of URLs.
 */
function buildQueueQuery(urlCount: number) {
  return precompiledQuery<never, unknown[]>(SHARED_ARGS + ARGS_PER_URL * urlCount, (db, args) => {
    const [serial, now, ip, firmwareVersion] = args;
    const rows = Array.from({ length: urlCount }, (_, index) => {
      const [url, host, eventId] = args.slice(SHARED_ARGS + ARGS_PER_URL * index);
      return {
        okm_serial: serial as string,
        url: url as string,
        host: host as string,
        state: 'pending' as const,
        event_id: eventId as string,
        queued_at: now as number,
        last_sync_time: now as number,
        last_ip: ip as string,
        firmware_version: firmwareVersion as string | null,
        attempts: 0,
        next_attempt_at: now as number,
      };
    });
    return db
      .insertInto('status_events')
      .values(rows)
      .onConflict((oc) =>
        oc
          .columns(['okm_serial', 'url'])
          .doUpdateSet((eb) => {
            const wasPending = eb('status_events.state', '=', PENDING);
            return {
              event_id: eb.ref('excluded.event_id'),
              queued_at: eb.ref('excluded.queued_at'),
              last_sync_time: eb.ref('excluded.last_sync_time'),
              last_ip: eb.ref('excluded.last_ip'),
              firmware_version: eb.ref('excluded.firmware_version'),
              attempts: eb.case().when(wasPending).then(eb.ref('status_events.attempts')).else(eb.ref('excluded.attempts')).end(),
              next_attempt_at: eb
                .case()
                .when(wasPending)
                .then(eb.ref('status_events.next_attempt_at'))
                .else(eb.ref('excluded.next_attempt_at'))
                .end(),
              state: eb.ref('excluded.state'),
            };
          })
          .where('status_events.state', '<>', sql.lit<StatusEventState>('gone')),
      );
  });
}

const queueQueries = new Map<number, ReturnType<typeof buildQueueQuery>>();

/** Queues the poll's status for each URL (inside the poll's transaction). */
export async function queueStatusEvents(db: Db, serialNumber: string, urls: readonly string[], status: PolledStatus): Promise<void> {
  let query = queueQueries.get(urls.length);
  if (!query) {
    query = buildQueueQuery(urls.length);
    queueQueries.set(urls.length, query);
  }
  const perUrl = urls.flatMap((url) => [url, hostOf(url), newEventId()]);
  await query(db, serialNumber, status.now, status.ip, status.firmwareVersion, ...perUrl);
}

/** Drops the queue rows (and so the 410 stops) of URLs an OKM no longer lists. */
export async function forgetRemovedStatusUrls(db: Db, serialNumber: string, urls: readonly string[]): Promise<void> {
  await db
    .deleteFrom('status_events')
    .where('okm_serial', '=', serialNumber)
    .$if(urls.length > 0, (qb) => qb.where('url', 'not in', urls))
    .execute();
}

export interface ClaimedEvent {
  id: number;
  okmSerial: string;
  url: string;
  host: string;
  eventId: string;
  queuedAt: number;
  lastSyncTime: number;
  lastIp: string;
  firmwareVersion: string | null;
  attempts: number;
  customerId: number | null;
}

export interface ClaimRequest {
  now: number;
  limit: number;
  /** Identifies this claim: only its holder may record the outcome. */
  token: string;
  claimedUntil: number;
  /** Hosts that already have as many deliveries in flight as allowed. */
  excludedHosts: readonly string[];
}

/**
 * Takes up to `limit` due pending rows, oldest due first, that no other dispatcher holds (or
 * whose holder's claim has lapsed), in one statement.
 */
export async function claimDueEvents(db: Db, dialect: DialectStrategy, claim: ClaimRequest): Promise<ClaimedEvent[]> {
  const due = db
    .selectFrom('status_events')
    .select('id')
    .where('state', '=', PENDING)
    .where('next_attempt_at', '<=', claim.now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', claim.now)]))
    .$if(claim.excludedHosts.length > 0, (qb) => qb.where('host', 'not in', claim.excludedHosts))
    .orderBy('next_attempt_at')
    .limit(claim.limit);
  const rows = await db
    .updateTable('status_events')
    .set({ claim_token: claim.token, claimed_until: claim.claimedUntil })
    .where('id', 'in', dialect.skipRowsClaimedByOthers(due))
    .returning((eb) => [
      'id',
      'okm_serial',
      'url',
      'host',
      'event_id',
      'queued_at',
      'last_sync_time',
      'last_ip',
      'firmware_version',
      'attempts',
      eb.selectFrom('okms').select('okms.customer_id').whereRef('okms.serial_number', '=', 'status_events.okm_serial').as('customer_id'),
    ])
    .execute();
  return rows.map((row) => ({
    id: row.id,
    okmSerial: row.okm_serial,
    url: row.url,
    host: row.host,
    eventId: row.event_id,
    queuedAt: row.queued_at,
    lastSyncTime: row.last_sync_time,
    lastIp: row.last_ip,
    firmwareVersion: row.firmware_version,
    attempts: row.attempts,
    customerId: row.customer_id ?? null,
  }));
}

/** Gives back claimed rows untouched (their host turned out to be busy). */
export async function releaseClaims(db: Db, ids: readonly number[], token: string): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('status_events').set({ claim_token: null, claimed_until: null }).where('id', 'in', ids).where('claim_token', '=', token).execute();
}

/** The recorded outcome of one attempt. */
export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'retrying'; statusCode: number | null; error: string; nextAttemptAt: number }
  | { kind: 'failed' | 'gone'; statusCode: number | null; error: string };

export interface AttemptRecord {
  event: ClaimedEvent;
  token: string;
  attemptedAt: number;
  outcome: AttemptOutcome;
}

/**
 * Writes the outcome of attempts and releases their claims. A row whose event was superseded
 * by a newer poll during the attempt stays pending for that newer event. Only the claim's
 * holder writes: a dispatcher whose claim lapsed and was taken over changes nothing.
 */
export async function recordAttempts(db: Db, records: readonly AttemptRecord[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const { event, token, attemptedAt, outcome } of records) {
      const attempt = event.attempts + 1;
      const common = { claim_token: null, claimed_until: null, last_attempt_at: attemptedAt, last_status_code: outcome.statusCode };
      const update = tx.updateTable('status_events').where('id', '=', event.id).where('claim_token', '=', token);
      if (outcome.kind === 'delivered') {
        await update
          .set((eb) => ({
            ...common,
            state: eb.case().when('event_id', '=', event.eventId).then(sql.lit<StatusEventState>('delivered')).else(PENDING).end(),
            attempts: 0,
            next_attempt_at: attemptedAt,
            last_error: null,
            delivered_at: attemptedAt,
          }))
          .execute();
        continue;
      }
      const nextAttemptAt = outcome.kind === 'retrying' ? outcome.nextAttemptAt : null;
      const result = await update
        .set({
          ...common,
          ...(outcome.kind === 'retrying' ? { next_attempt_at: outcome.nextAttemptAt } : { state: outcome.kind }),
          attempts: attempt,
          last_error: outcome.error,
        })
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) continue;
      await tx
        .insertInto('status_delivery_failures')
        .values({
          okm_serial: event.okmSerial,
          url: event.url,
          event_id: event.eventId,
          attempt,
          attempted_at: attemptedAt,
          status_code: outcome.statusCode,
          error: outcome.error,
          outcome: outcome.kind,
          next_attempt_at: nextAttemptAt,
        })
        .execute();
    }
  });
}

/** Status events waiting to be delivered, over all OKMs. */
export async function countPendingEvents(db: Db): Promise<number> {
  const row = await db.selectFrom('status_events').select((eb) => eb.fn.countAll<number>().as('count')).where('state', '=', PENDING).executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Removes delivery-log entries older than `before`. */
export async function pruneDeliveryFailures(db: Db, before: number): Promise<void> {
  await db.deleteFrom('status_delivery_failures').where('attempted_at', '<', before).execute();
}

export const DELIVERY_LOG_FAILURES = 100;

export interface DeliveryLog {
  subscriptions: Selectable<StatusEventsTable>[];
  failures: Selectable<StatusDeliveryFailuresTable>[];
}

/** An OKM's queue rows (one per URL) and its newest failed attempts. */
export async function deliveryLog(db: Db, serialNumber: string): Promise<DeliveryLog> {
  const [subscriptions, failures] = await Promise.all([
    db.selectFrom('status_events').selectAll().where('okm_serial', '=', serialNumber).orderBy('url').execute(),
    db
      .selectFrom('status_delivery_failures')
      .selectAll()
      .where('okm_serial', '=', serialNumber)
      .orderBy('id', 'desc')
      .limit(DELIVERY_LOG_FAILURES)
      .execute(),
  ]);
  return { subscriptions, failures };
}
