/**
 * When a claim of an OKM is taken, refused or slowed (contract §10, docs/okm-admin-api.md,
 * Claiming): pure, so that the rules can be checked against any sequence of attempts
 * (test/okm/claim-policy.test.ts); claim-repository.ts keeps the counts in the database.
 *
 * - Each customer has its own count of failed claims of each serial number: after
 *   MAX_FAILED_CLAIMS within CLAIM_WINDOW_MS, that customer's claims of it are refused for
 *   CLAIM_BLOCK_MS. This is the brute-force limit, and only the customer that failed is held:
 *   a per-serial block would let any customer lock the rightful owner out.
 * - The serial number also counts the failures of every customer: from SLOWED_AFTER_FAILURES
 *   within its window, each failure holds the customers that have themselves failed on it for
 *   CLAIM_SLOWDOWN_MS, so that customers acting together get about one guess per slowdown
 *   rather than MAX_FAILED_CLAIMS each. A customer that has not failed on the serial number
 *   (the owner typing the code from the installer) is never slowed, and a slowdown never
 *   lasts longer than CLAIM_SLOWDOWN_MS from the last failure.
 */

export const MAX_FAILED_CLAIMS = 5;
export const CLAIM_WINDOW_MS = 15 * 60_000;
export const CLAIM_BLOCK_MS = 15 * 60_000;
/**
 * Above what one customer can fail within one window of the serial number (at most
 * 2 × MAX_FAILED_CLAIMS − 1: its block outlasts its own window), so that one other customer
 * alone never slows anyone.
 */
export const SLOWED_AFTER_FAILURES = 2 * MAX_FAILED_CLAIMS;
export const CLAIM_SLOWDOWN_MS = 2_000;

/** Failed claims in a window that started at the first of them; `until`: blocked (a customer's) or slowed (the serial number's) until then. */
export interface FailureCount {
  failures: number;
  windowStartedAt: number;
  until: number | null;
}

/** The counts one claim looks at: the serial number's, of every customer, and the claiming customer's own. */
export interface ClaimCounts {
  serial: FailureCount;
  customer: FailureCount;
}

export const NO_FAILURES: FailureCount = { failures: 0, windowStartedAt: 0, until: null };

export type ClaimGate = { kind: 'open' } | { kind: 'blocked'; until: number } | { kind: 'slowed'; until: number };

/** Failures in the window that is still running at `now`; 0 once it is over. */
export function failuresInWindow(count: FailureCount, now: number): number {
  return count.failures > 0 && count.windowStartedAt + CLAIM_WINDOW_MS > now ? count.failures : 0;
}

/** Whether the claim is looked at (open) or refused with 429 until a time: the customer's own block first, then the serial number's slowdown. */
export function claimGate({ serial, customer }: ClaimCounts, now: number): ClaimGate {
  if (customer.until !== null && customer.until > now) return { kind: 'blocked', until: customer.until };
  if (serial.until !== null && serial.until > now && failuresInWindow(customer, now) > 0) return { kind: 'slowed', until: serial.until };
  return { kind: 'open' };
}

/** The counts after one more failed claim at `now`: each starts a new window if its last one is over. */
export function countFailedClaim({ serial, customer }: ClaimCounts, now: number): ClaimCounts {
  return {
    serial: countFailure(serial, now, SLOWED_AFTER_FAILURES, CLAIM_SLOWDOWN_MS),
    customer: countFailure(customer, now, MAX_FAILED_CLAIMS, CLAIM_BLOCK_MS),
  };
}

function countFailure(previous: FailureCount, now: number, limit: number, holdMs: number): FailureCount {
  const running = failuresInWindow(previous, now);
  const failures = running + 1;
  const windowStartedAt = running === 0 ? now : previous.windowStartedAt;
  return { failures, windowStartedAt, until: failures >= limit ? now + holdMs : null };
}

/** When a count's row may be deleted: its window and its block or slowdown are over. */
export const expiresAt = (count: FailureCount) => Math.max(count.windowStartedAt + CLAIM_WINDOW_MS, count.until ?? 0);
