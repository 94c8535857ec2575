import type { FastifyBaseLogger } from 'fastify';

/** Socket errors of a database that is down, restarting or out of reach. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * PostgreSQL SQLSTATE classes (the first two characters, https://www.postgresql.org/docs/current/errcodes-appendix.html)
 * in which every code means the database cannot serve now, whatever the statement: the
 * request may succeed once it is back, so it is a 503, never a 500 or a credential failure.
 */
const UNAVAILABLE_SQLSTATE_CLASSES = new Set([
  '08', // connection exception: the connection failed or was lost
  '28', // invalid authorization: the deployment's own database role may not log in (NOLOGIN, a changed password)
  '53', // insufficient resources: too many connections (per server, role or database), disk full, out of memory
  '57', // operator intervention: shutdown, pg_terminate_backend, starting up, database dropped, statement_timeout
  '58', // system error: an I/O error of the server
]);

/**
 * Single SQLSTATEs of an unavailable database outside those classes. keyfleet's statements
 * raise none of them otherwise: it uses no currval (55000), names no other database (3D000),
 * and writes only on a primary (25006).
 */
const UNAVAILABLE_SQLSTATES = new Set([
  '55000', // object_not_in_prerequisite_state: the database does not accept connections (ALLOW_CONNECTIONS false)
  '3D000', // invalid_catalog_name: the database does not exist (renamed or dropped away)
  '25006', // read_only_sql_transaction: connected to a standby, as after a failover
  '25P03', // idle_in_transaction_session_timeout
]);

/**
 * SQLite result codes (better-sqlite3's `code`, the primary code or an extended one that
 * starts with it) of a database file that cannot be used now: locked by another process past
 * busy_timeout, an I/O error, a file that cannot be opened, a full disk. Not SQLITE_CORRUPT or
 * a constraint: those are no outage.
 */
const UNAVAILABLE_SQLITE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|PROTOCOL|NOMEM)(_|$)/;

/** node-postgres reports these without a code. */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^Query read timeout/,
];

function isUnavailableCode(code: string): boolean {
  if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SQLITE_CODES.test(code)) return true;
  return /^[0-9A-Z]{5}$/.test(code) && UNAVAILABLE_SQLSTATE_CLASSES.has(code.slice(0, 2));
}

/**
 * True when `error` says the database is unavailable rather than that the request or the code
 * is wrong: the request may succeed once the database is back, so it is answered 503, not 500.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 3) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && isUnavailableCode(code)) return true;
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
