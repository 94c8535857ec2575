import type { Db } from '../db/database.ts';
import { CLAIM_WINDOW_MS, expiresAt, NO_FAILURES, type ClaimCounts, type FailureCount } from './claim-policy.ts';

const toCount = (row: { failures: number; window_started_at: number }, until: number | null): FailureCount => ({
  failures: Number(row.failures),
  windowStartedAt: Number(row.window_started_at),
  until: until === null ? null : Number(until),
});

/**
 * Takes the row lock of the serial number's failed claims for the rest of the transaction
 * (creating an empty row if there is none), so that concurrent claims of one serial number,
 * from any process and any customer, are counted one after the other; then reads the
 * customer's own count, which only transactions holding that lock write.
 */
export async function lockClaimFailures(trx: Db, serialNumber: string, customerId: number, now: number): Promise<ClaimCounts> {
  await trx
    .insertInto('okm_claim_failures')
    .values({ serial_number: serialNumber, failures: 0, window_started_at: now, slowed_until: null, expires_at: now + CLAIM_WINDOW_MS })
    .onConflict((oc) => oc.column('serial_number').doUpdateSet((eb) => ({ failures: eb.ref('okm_claim_failures.failures') })))
    .execute();
  const serial = await trx
    .selectFrom('okm_claim_failures')
    .select(['failures', 'window_started_at', 'slowed_until'])
    .where('serial_number', '=', serialNumber)
    .executeTakeFirstOrThrow();
  const customer = await trx
    .selectFrom('okm_claim_customer_failures')
    .select(['failures', 'window_started_at', 'blocked_until'])
    .where('serial_number', '=', serialNumber)
    .where('customer_id', '=', customerId)
    .executeTakeFirst();
  return {
    serial: toCount(serial, serial.slowed_until),
    customer: customer === undefined ? NO_FAILURES : toCount(customer, customer.blocked_until),
  };
}

/** Writes the counts after a failed claim (claim-policy.ts, countFailedClaim), under the lock lockClaimFailures took. */
export async function recordFailedClaim(trx: Db, serialNumber: string, customerId: number, { serial, customer }: ClaimCounts): Promise<void> {
  await trx
    .updateTable('okm_claim_failures')
    .set({ failures: serial.failures, window_started_at: serial.windowStartedAt, slowed_until: serial.until, expires_at: expiresAt(serial) })
    .where('serial_number', '=', serialNumber)
    .execute();
  const own = { failures: customer.failures, window_started_at: customer.windowStartedAt, blocked_until: customer.until, expires_at: expiresAt(customer) };
  await trx
    .insertInto('okm_claim_customer_failures')
    .values({ serial_number: serialNumber, customer_id: customerId, ...own })
    .onConflict((oc) => oc.columns(['serial_number', 'customer_id']).doUpdateSet(own))
    .execute();
}

/** Once the OKM is claimed, its counts go: every later claim fails anyway, and is counted afresh. */
export async function forgetClaimFailures(trx: Db, serialNumber: string): Promise<void> {
  await trx.deleteFrom('okm_claim_customer_failures').where('serial_number', '=', serialNumber).execute();
  await trx.deleteFrom('okm_claim_failures').where('serial_number', '=', serialNumber).execute();
}

/** Deletes the rows whose window and block or slowdown are over, so that guessed serial numbers do not pile up. */
export async function pruneClaimFailures(db: Db, now: number): Promise<void> {
  await db.deleteFrom('okm_claim_customer_failures').where('expires_at', '<=', now).execute();
  await db.deleteFrom('okm_claim_failures').where('expires_at', '<=', now).execute();
}
