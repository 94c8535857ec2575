/** Spread of each retry delay around its scheduled value (±20 %), so that retries to one host do not arrive in step. */
const JITTER = 0.2;

/** A Retry-After longer than this is taken as this. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * When the attempt after `failedAttempts` failed attempts is due: the schedule's delay with
 * jitter, or later if the subscriber asked for more time with Retry-After. Undefined when
 * the schedule is exhausted: the delivery has failed.
 */
export function nextAttemptAt(
  schedule: readonly number[],
  failedAttempts: number,
  now: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  const delay = schedule[failedAttempts - 1];
  if (delay === undefined) return undefined;
  const jittered = Math.round(delay * (1 - JITTER + 2 * JITTER * random()));
  return now + Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** Retry-After as delay-seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  if (/^\d{1,10}$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
