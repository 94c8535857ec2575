import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { multiRowStatement } from '../db/chunked-statements.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { StatusEventState } from '../db/schema.ts';
import { emitSubscriberFailing } from './subscriber-health.ts';

/*
 * The status-event queue (status_events), one row per OKM and subscriber URL: the fan-out that
 * writes its rows, the claims, and the outcomes (a failed attempt logged in
 * status_delivery_failures and, once the attempts run out, a subscriber.failing fleet event).
 * The claim parts that the fleet events' queue shares (dueRowIds, hostsWithPendingEvents, the
 * attempt records) are here too; that queue's own statements are in
 * fleet-deliveries-repository.ts, an OKM's delivery log as the API reads it in
 * delivery-log-repository.ts.
 */

// Literal, not a parameter, so that SQLite can use the partial index on pending rows.
export const PENDING = sql.lit<StatusEventState>('pending');

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

interface StatusToQueue {
  serialNumber: string;
  url: string;
  host: string;
  /** The row is due then. */
  now: number;
  /** Set when the fanning-out dispatcher takes the row at once (see FanOutClaim). */
  claim: { token: string; claimedUntil: number } | undefined;
}

/**
 * The upsert of status events, one row per OKM and URL: a new row is pending and due at once; a
 * delivered or failed row becomes pending again, due at once; a pending row is left as it
 * is (its next attempt will send the status as it is then, the newest); a URL that answered
 * 410 stays stopped. A left row is not written at all, so a subscriber that is down or slow
 * costs its polls nothing. A row written may be claimed in the same statement. Returns the
 * rows written.
 */
const upsertStatusEvents = multiRowStatement<StatusToQueue, { id: number; okm_serial: string; url: string; claim_token: string | null }>(6, (db, rows) =>
  db
    .insertInto('status_events')
    .values(
      rows.map(([serial, url, host, now, token, claimedUntil]) => ({
        okm_serial: serial as string,
        url: url as string,
        host: host as string,
        state: 'pending' as const,
        attempts: 0,
        next_attempt_at: now as number,
        claim_token: token as string | null,
        claimed_until: claimedUntil as number | null,
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['okm_serial', 'url'])
        .doUpdateSet((eb) => ({
          state: eb.ref('excluded.state'),
          attempts: eb.ref('excluded.attempts'),
          next_attempt_at: eb.ref('excluded.next_attempt_at'),
          claim_token: eb.ref('excluded.claim_token'),
          claimed_until: eb.ref('excluded.claimed_until'),
        }))
        .where('status_events.state', 'in', [sql.lit<StatusEventState>('delivered'), sql.lit<StatusEventState>('failed')]),
    )
    .returning(['id', 'okm_serial', 'url', 'claim_token']),
);

/**
 * How a fan-out takes the rows it writes for the dispatcher running it: asked once per row
 * (OKM and URL) before the write, in order, it answers with the claim for that row or
 * undefined to leave the row unclaimed (its host has no room in this dispatcher).
 */
export type FanOutClaim = (host: string) => { token: string; claimedUntil: number } | undefined;

export interface FanOut {
  /** OKMs whose mark was cleared. */
  fannedOut: number;
  /** The rows written and claimed (see FanOutClaim), with the status the fan-out read. */
  claimed: ClaimedEvent[];
}

/**
 * Fans out the statuses that polls queued on their OKMs' poll rows (okm_polls.status_queued_at): one
 * queue row per subscriber URL, the rows of many OKMs in one statement, the marks cleared in
 * the same transaction, oldest mark first, up to `limit` OKMs. A crash before the commit
 * leaves the marks. On PostgreSQL, OKMs another transaction holds (a batch of polls, another
 * dispatcher's fan-out) are skipped. With `claim`, the rows written are claimed in the same
 * statement (so that a fresh status needs no claim of its own) and returned with the
 * status read here, as claimDueEvents returns them.
 */
export async function fanOutQueuedStatuses(db: Db, dialect: DialectStrategy, limit: number, now = Date.now(), claim?: FanOutClaim): Promise<FanOut> {
  return db.transaction().execute(async (tx) => {
    // Losing this commit in a crash loses the cleared marks and the rows together: consistent.
    await dialect.relaxCommitDurability(tx);
    const marked = tx.selectFrom('okm_polls').select('serial_number').where('status_queued_at', 'is not', null).orderBy('status_queued_at').limit(limit);
    const polls = await tx
      .with((cte) => cte('marked').materialized(), () => dialect.skipRowsClaimedByOthers(marked))
      .updateTable('okm_polls')
      .set({ status_queued_at: null })
      .where('serial_number', 'in', (eb) => eb.selectFrom('marked').select('marked.serial_number'))
      .returning(['serial_number', 'last_sync_time', 'last_ip'])
      .execute();
    const owners =
      polls.length === 0
        ? []
        : await tx
            .selectFrom('okms')
            .select(['serial_number', 'status_urls', 'customer_id', 'firmware_version'])
            .where(
              'serial_number',
              'in',
              polls.map((poll) => poll.serial_number),
            )
            .execute();
    const ownerOf = new Map(owners.map((okm) => [okm.serial_number, okm]));
    const taken = polls.flatMap((poll) => {
      const okm = ownerOf.get(poll.serial_number);
      return okm ? [{ ...okm, last_sync_time: poll.last_sync_time as number | null, last_ip: poll.last_ip as string | null }] : [];
    });
    // An OKM and URL listed twice is queued once (a statement may not upsert one row twice).
    const unique = new Map<string, StatusToQueue>();
    for (const okm of taken) {
      for (const url of JSON.parse(okm.status_urls) as string[]) {
        const key = `${okm.serial_number}\n${url}`;
        if (unique.has(key)) continue;
        const host = hostOf(url);
        unique.set(key, { serialNumber: okm.serial_number, url, host, now, claim: claim?.(host) });
      }
    }
    const written = await upsertStatusEvents(tx, [...unique.values()], (row) => [row.serialNumber, row.url, row.host, row.now, row.claim?.token ?? null, row.claim?.claimedUntil ?? null]);
    const okms = new Map(taken.map((okm) => [okm.serial_number, okm]));
    const claimed = written
      .filter((row) => row.claim_token !== null)
      .map((row) => {
        const okm = okms.get(row.okm_serial)!;
        return claimedEvent({ ...row, host: hostOf(row.url), attempts: 0, ...okm });
      });
    return { fannedOut: taken.length, claimed };
  });
}

/** Drops the queue rows (and so the 410 stops) of URLs an OKM no longer lists. */
export async function forgetRemovedStatusUrls(db: Db, serialNumber: string, urls: readonly string[]): Promise<void> {
  await db
    .deleteFrom('status_events')
    .where('okm_serial', '=', serialNumber)
    .$if(urls.length > 0, (qb) => qb.where('url', 'not in', urls))
    .execute();
}

/** A claimed row with the OKM's status as it was read by the claim. */
export interface ClaimedEvent {
  kind: 'status';
  id: number;
  okmSerial: string;
  url: string;
  host: string;
  /** Derived from the URL and the status, so every attempt of one status has the same id and a newer status a new one. */
  eventId: string;
  lastSyncTime: number;
  lastIp: string;
  firmwareVersion: string | null;
  attempts: number;
  customerId: number | null;
}

function eventIdOf(serial: string, url: string, lastSyncTime: number, lastIp: string, firmwareVersion: string | null): string {
  const digest = createHash('sha256').update(JSON.stringify([serial, url, lastSyncTime, lastIp, firmwareVersion])).digest('hex');
  return `msg_${digest.slice(0, 32)}`;
}

/**
 * The hosts that have pending events, with the earliest next attempt of each (due now or
 * later, claimed or not), found by seeking from one host to the next in the
 * pending index (a loose index scan), so the cost grows with the number of hosts, not with
 * the events a dead host has piled up.
 */
export async function hostsWithPendingEvents(db: Db, queue: DeliveryQueue = 'status_events'): Promise<{ host: string; firstDueAt: number }[]> {
  const table = sql.table(queue);
  const result = await sql<{ host: string; first_due_at: number | string }>`
    with recursive hosts(host) as (
      select min(host) from ${table} where state = ${PENDING}
      union all
      select (select min(later.host) from ${table} later where later.state = ${PENDING} and later.host > hosts.host)
      from hosts where hosts.host is not null
    )
    select host, (select min(next_attempt_at) from ${table} due where due.state = ${PENDING} and due.host = hosts.host) as first_due_at
    from hosts where host is not null`.execute(db);
  return result.rows.map((row) => ({ host: row.host, firstDueAt: Number(row.first_due_at) }));
}

export interface ClaimRequest {
  host: string;
  now: number;
  limit: number;
  /** Identifies this claim: only its holder may record the outcome. */
  token: string;
  claimedUntil: number;
}

/** The tables the dispatcher delivers from: status events and fleet events, alike in their delivery columns. */
export type DeliveryQueue = 'status_events' | 'fleet_event_deliveries';

/**
 * The ids of up to `limit` due pending rows of one host, oldest due first, that no other
 * dispatcher holds (or whose holder's claim has lapsed), for a claiming UPDATE.
 */
export function dueRowIds(db: Db, dialect: DialectStrategy, queue: DeliveryQueue, claim: ClaimRequest) {
  // Typed as status_events: the columns read here are the same in both tables.
  const due = db
    .selectFrom(queue as 'status_events')
    .select('id')
    .where('state', '=', PENDING)
    .where('host', '=', claim.host)
    .where('next_attempt_at', '<=', claim.now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', claim.now)]))
    .orderBy('next_attempt_at')
    .limit(claim.limit);
  return dialect.skipRowsClaimedByOthers(due);
}

/** Takes due status events of one host (see dueRowIds), in one statement. */
export async function claimDueEvents(db: Db, dialect: DialectStrategy, claim: ClaimRequest): Promise<ClaimedEvent[]> {
  const rows = await db
    .with((cte) => cte('due').materialized(), () => dueRowIds(db, dialect, 'status_events', claim))
    .updateTable('status_events')
    .set({ claim_token: claim.token, claimed_until: claim.claimedUntil })
    .where('id', 'in', (eb) => eb.selectFrom('due').select('due.id'))
    .returning((eb) => {
      const okm = eb.selectFrom('okms').whereRef('okms.serial_number', '=', 'status_events.okm_serial');
      const poll = eb.selectFrom('okm_polls').whereRef('okm_polls.serial_number', '=', 'status_events.okm_serial');
      return [
        'id',
        'okm_serial',
        'url',
        'host',
        'attempts',
        okm.select('okms.customer_id').as('customer_id'),
        poll.select('okm_polls.last_sync_time').as('last_sync_time'),
        poll.select('okm_polls.last_ip').as('last_ip'),
        okm.select('okms.firmware_version').as('firmware_version'),
      ];
    })
    .execute();
  return rows.map(claimedEvent);
}

interface ClaimedRow {
  id: number;
  okm_serial: string;
  url: string;
  host: string;
  attempts: number;
  customer_id: number | null;
  last_sync_time: number | null;
  last_ip: string | null;
  firmware_version: string | null;
}

function claimedEvent(row: ClaimedRow): ClaimedEvent {
  // A queued OKM has polled, so it has a sync time and an IP.
  const lastSyncTime = Number(row.last_sync_time);
  const lastIp = row.last_ip ?? '';
  const firmwareVersion = row.firmware_version ?? null;
  return {
    kind: 'status',
    id: row.id,
    okmSerial: row.okm_serial,
    url: row.url,
    host: row.host,
    eventId: eventIdOf(row.okm_serial, row.url, lastSyncTime, lastIp, firmwareVersion),
    lastSyncTime,
    lastIp,
    firmwareVersion,
    attempts: row.attempts,
    customerId: row.customer_id ?? null,
  };
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

export interface AttemptRecord<Event = ClaimedEvent> {
  event: Event;
  token: string;
  attemptedAt: number;
  outcome: AttemptOutcome;
}

type DeliveredRecord = AttemptRecord & { outcome: { kind: 'delivered' } };

/**
 * Delivered attempts, the common outcome (one per event), many rows per statement: each row is
 * delivered unless its OKM polled again since the status was read, in which case the newer
 * status is due at once. The values are cast so that PostgreSQL knows their types.
 */
const recordDelivered = multiRowStatement<DeliveredRecord>(6, (db, rows) => {
  const values = rows.map(
    ([id, token, eventId, attemptedAt, statusCode, sentSyncTime]) =>
      sql`(cast(${id} as bigint), cast(${token} as text), cast(${eventId} as text), cast(${attemptedAt} as bigint), cast(${statusCode} as integer), cast(${sentSyncTime} as bigint))`,
  );
  const sent = sql<{ column1: number; column2: string; column3: string; column4: number; column5: number; column6: number }>`(values ${sql.join(values)})`.as('sent');
  return db
    .updateTable('status_events')
    .from(sent)
    .set((eb) => ({
      state: eb
        .case()
        .when(eb.selectFrom('okm_polls').select('okm_polls.last_sync_time').whereRef('okm_polls.serial_number', '=', 'status_events.okm_serial'), '=', eb.ref('sent.column6'))
        .then(sql.lit<StatusEventState>('delivered'))
        .else(PENDING)
        .end(),
      attempts: 0,
      next_attempt_at: eb.ref('sent.column4'),
      claim_token: null,
      claimed_until: null,
      last_event_id: eb.ref('sent.column3'),
      last_attempt_at: eb.ref('sent.column4'),
      last_status_code: eb.ref('sent.column5'),
      last_error: null,
      delivered_at: eb.ref('sent.column4'),
    }))
    .whereRef('status_events.id', '=', 'sent.column1')
    .whereRef('status_events.claim_token', '=', 'sent.column2');
});

/**
 * Writes the outcomes of a batch of attempts in one transaction that never waits for a row
 * lock (so it cannot deadlock with a batch of polls locking the same rows in another
 * order): rows another transaction holds are skipped and written afterwards one
 * transaction each. None of these transactions waits for its commit to reach the disk: a
 * lost outcome only means the claim lapses and the event is sent again.
 */
export async function recordAttempts(db: Db, dialect: DialectStrategy, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  const ids = records.map((record) => record.event.id);
  const held = await db.transaction().execute(async (tx) => {
    await dialect.relaxCommitDurability(tx);
    const lockable = await dialect.skipRowsClaimedByOthers(tx.selectFrom('status_events').select('id').where('id', 'in', ids)).execute();
    const ours = new Set(lockable.map((row) => row.id));
    await writeOutcomes(tx, records.filter((record) => ours.has(record.event.id)));
    return records.filter((record) => !ours.has(record.event.id));
  });
  for (const record of held) {
    await db.transaction().execute(async (tx) => {
      await dialect.relaxCommitDurability(tx);
      await writeOutcomes(tx, [record]);
    });
  }
}


/**
 * Writes the outcomes of attempts and releases their claims. A row whose OKM polled again
 * during a successful attempt stays pending, so the newer status follows. Only the claim's
 * holder writes: a dispatcher whose claim lapsed and was taken over changes nothing.
 */
async function writeOutcomes(db: Db, records: readonly AttemptRecord[]): Promise<void> {
  const delivered = records.filter((record): record is DeliveredRecord => record.outcome.kind === 'delivered');
  await recordDelivered(db, delivered, ({ event, token, attemptedAt, outcome }) => [event.id, token, event.eventId, attemptedAt, outcome.statusCode, event.lastSyncTime]);
  for (const { outcome, ...record } of records) if (outcome.kind !== 'delivered') await recordUndelivered(db, record, outcome);
}

/** An attempt that did not deliver: its row is updated and the attempt logged in status_delivery_failures. */
async function recordUndelivered(
  db: Db,
  { event, token, attemptedAt }: Omit<AttemptRecord, 'outcome'>,
  outcome: Exclude<AttemptOutcome, { kind: 'delivered' }>,
): Promise<void> {
  const attempt = event.attempts + 1;
  const nextAttemptAt = outcome.kind === 'retrying' ? outcome.nextAttemptAt : null;
  const result = await db
    .updateTable('status_events')
    .set({
      ...(outcome.kind === 'retrying' ? { next_attempt_at: outcome.nextAttemptAt } : { state: outcome.kind }),
      attempts: attempt,
      claim_token: null,
      claimed_until: null,
      last_event_id: event.eventId,
      last_attempt_at: attemptedAt,
      last_status_code: outcome.statusCode,
      last_error: outcome.error,
    })
    .where('id', '=', event.id)
    .where('claim_token', '=', token)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return;
  await db
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
  if (outcome.kind === 'failed') {
    const { okmSerial, customerId, url, eventId } = event;
    await emitSubscriberFailing(db, { okmSerial, customerId, url, eventId, attempts: attempt, attemptedAt, statusCode: outcome.statusCode, error: outcome.error });
  }
}

/**
 * Status events waiting to be delivered, over all OKMs: the pending queue rows, and one for each
 * OKM whose newest status is queued but not fanned out yet.
 */
export async function countPendingEvents(db: Db): Promise<number> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.selectFrom('status_events').select((count) => count.fn.countAll<number>().as('count')).where('state', '=', PENDING).as('rows'),
      eb.selectFrom('okm_polls').select((count) => count.fn.countAll<number>().as('count')).where('status_queued_at', 'is not', null).as('marks'),
    ])
    .executeTakeFirstOrThrow();
  return Number(row.rows) + Number(row.marks);
}
