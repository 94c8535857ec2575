import type { FastifyBaseLogger } from 'fastify';

/** Socket errors of a database that is down, restarting or out of reach. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * PostgreSQL SQLSTATEs of a server that is shutting down, starting, restarting, failing over or
 * ending sessions (https://www.postgresql.org/docs/current/errcodes-appendix.html): class 08
 * (connection exception) is matched by prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_ctl stop -m fast, pg_terminate_backend
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '57P05', // idle_session_timeout
  '25P03', // idle_in_transaction_session_timeout
  '53300', // too_many_connections
  '57014', // query_canceled: statement_timeout
]);

/** node-postgres reports these without a code. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^Query read timeout/,
];

/**
 * True when `error` says the database is unavailable rather than that the request or the code
 * is wrong: the request may succeed once the database is back, so it is answered 503, not 500.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 3) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  if (DRIVER_MESSAGES.some((pattern) => pattern.test(error.message))) return true;
  if (error instanceof AggregateError && error.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(error.cause, depth + 1);
}

/**
 * PostgreSQL SQLSTATEs of a transaction that lost a race for rows and may simply be run again:
 * deadlock_detected, serialization_failure, and lock_not_available (a NOWAIT lock taken).
 */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001', '55P03']);

/** True when `error` ended a transaction that lost a race for locks; running it again may succeed. */
export const isTransactionConflict = (error: unknown): boolean =>
  error instanceof Error && CONFLICT_SQLSTATES.has((error as { code?: unknown }).code as string);

/** What a log line says of a connection error: no stack, which would repeat on every request of an outage. */
export function describeConnectionError(error: unknown): { code?: string; message: string } {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' && message !== '' ? message : String(error);
  return typeof code === 'string' ? { code, message: text } : { message: text };
}

/** While the database is unavailable, one warning per this interval, with the count of the failures it stands for. */
export const OUTAGE_LOG_INTERVAL_MS = 10_000;

/**
 * Logs database-unavailable errors at warn, at most once per OUTAGE_LOG_INTERVAL_MS per
 * `what`: an outage fails every request and every background pass, and one line says it.
 * `log` is the default logger; a call may pass its own (a request's).
 */
export function createOutageLog(log?: FastifyBaseLogger): (what: string, error: unknown, logger?: FastifyBaseLogger) => void {
  const windows = new Map<string, { loggedAt: number; suppressed: number }>();
  return (what, error, logger = log) => {
    const now = Date.now();
    const window = windows.get(what);
    if (window && now - window.loggedAt < OUTAGE_LOG_INTERVAL_MS) {
      window.suppressed++;
      return;
    }
    const alsoFailed = window?.suppressed ?? 0;
    windows.set(what, { loggedAt: now, suppressed: 0 });
    logger?.warn({ database: describeConnectionError(error), ...(alsoFailed > 0 ? { alsoFailed } : {}) }, `${what}: database unavailable`);
  };
}
