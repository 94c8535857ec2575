import { sql, type ExpressionBuilder, type OnConflictBuilder, type Selectable } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { Database, PendingOkmsTable } from '../db/schema.ts';
import { emitFleetEvent } from '../webhooks/fleet-events.ts';

/** An unknown serial number that called while auto-enrol is off: what an operator needs to decide on it. */
export interface PendingOkm {
  serialNumber: string;
  firstSeenAt: number;
  lastSeenAt: number;
  lastIp: string;
  /** kasFirmware of its last poll that sent one. */
  firmwareVersion: string | null;
  /** Config polls and audit posts so far. */
  calls: number;
}

/** One call from an unknown serial number. */
export interface PendingCall {
  now: number;
  ip: string;
  firmwareVersion: string | null;
}

const toPendingOkm = (row: Selectable<PendingOkmsTable>): PendingOkm => ({
  serialNumber: row.serial_number,
  firstSeenAt: row.first_seen_at,
  lastSeenAt: row.last_seen_at,
  lastIp: row.last_ip,
  firmwareVersion: row.firmware_version,
  calls: Number(row.call_count),
});

/** A call of a serial number already pending updates its entry: the INSERT's conflict clause, for one call or a batch of them. */
export const countAnotherCall = (oc: OnConflictBuilder<Database, 'pending_okms'>) =>
  oc.column('serial_number').doUpdateSet((eb) => ({
    last_seen_at: eb.ref('excluded.last_seen_at'),
    last_ip: eb.ref('excluded.last_ip'),
    firmware_version: eb.fn.coalesce(eb.ref('excluded.firmware_version'), eb.ref('pending_okms.firmware_version')),
    call_count: sql<number>`pending_okms.call_count + 1`,
  }));

const recordPendingCallQuery = precompiledQuery<{ call_count: number }, [string, number, string, string | null]>(4, (db, [serialNumber, now, ip, firmwareVersion]) =>
  db
    .insertInto('pending_okms')
    .values({
      serial_number: serialNumber as string,
      first_seen_at: now as number,
      last_seen_at: now as number,
      last_ip: ip as string,
      firmware_version: firmwareVersion as string | null,
      call_count: 1,
    })
    .onConflict(countAnotherCall)
    .returning('call_count'),
);

/** Records a call from an unknown serial number: adds it to the pending OKMs (emitting okm.pending), or updates its entry. */
export async function recordPendingCall(db: Db, serialNumber: string, call: PendingCall): Promise<void> {
  const { rows } = await recordPendingCallQuery(db, serialNumber, call.now, call.ip, call.firmwareVersion);
  if (Number(rows[0]?.call_count) === 1) await emitPending(db, serialNumber, call);
}

/** okm.pending for a serial number whose first call has just been recorded. */
export async function emitPending(db: Db, serialNumber: string, call: PendingCall): Promise<void> {
  const data = { serial_number: serialNumber, first_seen_at: new Date(call.now).toISOString(), last_ip: call.ip, firmware_version: call.firmwareVersion };
  await emitFleetEvent(db, { type: 'okm.pending', customerId: null, data }, call.now);
}

/**
 * A pending entry counts only while no OKM has its serial number: a poll recorded in a race
 * with the OKM's creation can leave a stale entry behind.
 */
const isStillUnknown = (eb: ExpressionBuilder<Database, 'pending_okms'>) =>
  eb.not(eb.exists(eb.selectFrom('okms').select('okms.serial_number').whereRef('okms.serial_number', '=', 'pending_okms.serial_number')));

/** The pending OKMs page by serial number, their primary key. */
export const PENDING_OKM_PAGES = cursorList<[serialNumber: string]>('pending-okms', ['string']);

/**
 * One page of the pending OKMs, by serial number, after the cursor's: a range of the primary
 * key entered at the cursor. Creating an OKM deletes its pending entry (insertOkm, the poll's
 * enrolment), so the list need not look for stale ones; only a poll that raced an accept could
 * leave one, which takePendingOkm then refuses.
 */
export async function listPendingOkms(db: Db, page: CursorPageRequest<[string]>): Promise<CursorPage<PendingOkm>> {
  let rows = db.selectFrom('pending_okms').selectAll().orderBy('serial_number').limit(page.limit + 1);
  if (page.after !== undefined) rows = rows.where(afterKey(['serial_number'], page.after));
  return PENDING_OKM_PAGES.page((await rows.execute()).map(toPendingOkm), page.limit, (pending) => [pending.serialNumber]);
}

/**
 * How many serial numbers are pending: a count of the primary key's entries. Pending OKMs are
 * the unknown serial numbers that called while auto-enrol is off, waiting for an operator,
 * so the walk is short unless operators leave thousands unanswered.
 */
export async function countPendingOkms(db: Db): Promise<number> {
  const row = await db
    .selectFrom('pending_okms')
    .select((eb) => eb.fn.countAll<number | string>().as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** Removes a pending OKM and returns it; undefined when there is none of that serial number. */
export async function takePendingOkm(db: Db, serialNumber: string): Promise<PendingOkm | undefined> {
  const row = await db
    .deleteFrom('pending_okms')
    .where('serial_number', '=', serialNumber)
    .where(isStillUnknown)
    .returningAll()
    .executeTakeFirst();
  return row && toPendingOkm(row);
}

/** Takes OKMs just created off the pending list: a serial number is pending or an OKM, never both. */
export async function forgetPendingOkms(db: Db, serialNumbers: readonly string[]): Promise<void> {
  if (serialNumbers.length > 0) await db.deleteFrom('pending_okms').where('serial_number', 'in', serialNumbers).execute();
}

export async function isPendingOkm(db: Db, serialNumber: string): Promise<boolean> {
  const row = await db
    .selectFrom('pending_okms')
    .select('serial_number')
    .where('serial_number', '=', serialNumber)
    .where(isStillUnknown)
    .executeTakeFirst();
  return row !== undefined;
}
