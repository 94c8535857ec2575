import type { Db } from '../db/database.ts';

/** After MAX_FAILED_CLAIMS failed claims of one serial number within CLAIM_WINDOW_MS, its claims are refused for CLAIM_BLOCK_MS. */
export const MAX_FAILED_CLAIMS = 5;
export const CLAIM_WINDOW_MS = 15 * 60_000;
export const CLAIM_BLOCK_MS = 15 * 60_000;

export interface ClaimFailures {
  failures: number;
  windowStartedAt: number;
  blockedUntil: number | null;
}

/**
 * Takes the row lock of the serial number's failed claims for the rest of the transaction
 * (creating an empty row if there is none), so that concurrent claims of one serial number,
 * from any process, are counted one after the other.
 */
export async function lockClaimFailures(trx: Db, serialNumber: string, now: number): Promise<ClaimFailures> {
  await trx
    .insertInto('okm_claim_failures')
    .values({ serial_number: serialNumber, failures: 0, window_started_at: now, blocked_until: null, expires_at: now + CLAIM_WINDOW_MS })
    .onConflict((oc) => oc.column('serial_number').doUpdateSet((eb) => ({ failures: eb.ref('okm_claim_failures.failures') })))
    .execute();
  const row = await trx
    .selectFrom('okm_claim_failures')
    .select(['failures', 'window_started_at', 'blocked_until'])
    .where('serial_number', '=', serialNumber)
    .executeTakeFirstOrThrow();
  return { failures: Number(row.failures), windowStartedAt: Number(row.window_started_at), blockedUntil: row.blocked_until === null ? null : Number(row.blocked_until) };
}

/** Counts one more failed claim (a new window if the last one is over) and blocks the serial number at the limit. */
export async function recordFailedClaim(trx: Db, serialNumber: string, previous: ClaimFailures, now: number): Promise<void> {
  const windowOver = previous.failures === 0 || previous.windowStartedAt + CLAIM_WINDOW_MS <= now;
  const failures = windowOver ? 1 : previous.failures + 1;
  const windowStartedAt = windowOver ? now : previous.windowStartedAt;
  const blockedUntil = failures >= MAX_FAILED_CLAIMS ? now + CLAIM_BLOCK_MS : null;
  await trx
    .updateTable('okm_claim_failures')
    .set({
      failures,
      window_started_at: windowStartedAt,
      blocked_until: blockedUntil,
      expires_at: Math.max(windowStartedAt + CLAIM_WINDOW_MS, blockedUntil ?? 0),
    })
    .where('serial_number', '=', serialNumber)
    .execute();
}

export async function forgetClaimFailures(trx: Db, serialNumber: string): Promise<void> {
  await trx.deleteFrom('okm_claim_failures').where('serial_number', '=', serialNumber).execute();
}

/** Deletes the rows whose window and block are over, so that guessed serial numbers do not pile up. */
export async function pruneClaimFailures(db: Db, now: number): Promise<void> {
  await db.deleteFrom('okm_claim_failures').where('expires_at', '<=', now).execute();
}
