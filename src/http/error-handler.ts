import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createOutageLog, isDatabaseUnavailable, OUTAGE_LOG_INTERVAL_MS } from '../db/connection-errors.ts';
import { InvalidCursorError } from '../db/cursor-pages.ts';
import { HttpError, UnavailableError } from './errors.ts';
import { describeValidationError } from './validation.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * How this route's errors are rendered: the default `{error_code, error_msg}`, or
     * `'dlock'` for `{status, msg}` (the DLock resource under /v1, contract §7.6).
     */
    errorShape?: 'dlock';
  }
}

interface ErrorReply {
  statusCode: number;
  errorCode: string;
  message: string;
  headers: Record<string, string>;
  bodyMembers?: Record<string, string>;
}

const FASTIFY_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  416: 'RANGE_NOT_SATISFIABLE',
  429: 'TOO_MANY_REQUESTS',
};

/** What a client of a request that failed for want of the database reads; it may try again. */
export const DATABASE_UNAVAILABLE = 'Database unavailable, try again later';
/** Retry-After of a 503: short, so that a client soon tries again (through a load balancer, on another server). */
export const RETRY_AFTER_SECONDS = '5';

/** One for the process: each plugin of an app has a server instance of its own. */
const logOutage = createOutageLog();

/** An UnavailableError, wherever it is in the error's causes. */
function unavailableErrorOf(error: unknown, depth = 0): UnavailableError | undefined {
  if (error instanceof UnavailableError) return error;
  return error instanceof Error && depth < 3 ? unavailableErrorOf(error.cause, depth + 1) : undefined;
}

/** Per error_code: one warning per OUTAGE_LOG_INTERVAL_MS for the process while requests fail for that reason, with the count it stands for. */
const unavailableWarnings = new Map<string, { warnedAt: number; failuresSinceWarning: number }>();
function logUnavailable(error: UnavailableError, request: FastifyRequest): void {
  const now = Date.now();
  const warnings = unavailableWarnings.get(error.errorCode) ?? { warnedAt: -Infinity, failuresSinceWarning: 0 };
  unavailableWarnings.set(error.errorCode, warnings);
  if (now - warnings.warnedAt < OUTAGE_LOG_INTERVAL_MS) {
    warnings.failuresSinceWarning++;
    return;
  }
  const alsoFailed = warnings.failuresSinceWarning;
  warnings.warnedAt = now;
  warnings.failuresSinceWarning = 0;
  request.log.warn({ ...error.logFields(), ...(alsoFailed > 0 ? { alsoFailed } : {}) }, error.warning);
}

function toErrorReply(error: FastifyError | HttpError, request: FastifyRequest): ErrorReply | undefined {
  if (error instanceof HttpError) {
    return { statusCode: error.statusCode, errorCode: error.errorCode, message: error.message, headers: error.headers, bodyMembers: error.bodyMembers };
  }
  if (error instanceof InvalidCursorError) return { statusCode: 400, errorCode: 'BAD_REQUEST', message: error.message, headers: {} };
  if (error.validation && error.validation.length > 0) {
    const message = describeValidationError(error.validationContext ?? 'body', error.validation[0] as never);
    return { statusCode: 400, errorCode: 'BAD_REQUEST', message, headers: {} };
  }
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    const message = `Content-Type ${request.headers['content-type']?.split(';')[0] ?? '(none)'} is not supported: JSON bodies are application/json, firmware files application/octet-stream`;
    return { statusCode: 415, errorCode: 'UNSUPPORTED_MEDIA_TYPE', message, headers: {} };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return { statusCode: status, errorCode: FASTIFY_CODES[status] ?? 'BAD_REQUEST', message: error.message, headers: {} };
  }
  return undefined;
}

function errorBody(request: FastifyRequest, statusCode: number, errorCode: string, message: string) {
  // routeOptions is there for routed requests only; framework errors come before routing.
  return request.routeOptions?.config?.errorShape === 'dlock'
    ? { status: statusCode, msg: message }
    : { error_code: errorCode, error_msg: message };
}

/**
 * The one place where errors become responses, never with a stack: `{error_code, error_msg}`
 * JSON, or `{status, msg}` on routes configured with `errorShape: 'dlock'`. A database that is
 * down or out of reach, and an UnavailableError (a master key that no longer opens the data
 * keys, say), are a 503 with Retry-After (the request may succeed later, here or on another
 * server), logged once per interval.
 */
export function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  if (isDatabaseUnavailable(error)) {
    logOutage('requests failed', error, request.log);
    return reply
      .code(503)
      .header('retry-after', RETRY_AFTER_SECONDS)
      .send(errorBody(request, 503, 'DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE));
  }
  const unavailable = unavailableErrorOf(error);
  if (unavailable) {
    logUnavailable(unavailable, request);
    return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send(errorBody(request, 503, unavailable.errorCode, unavailable.clientMessage));
  }
  const known = toErrorReply(error, request);
  if (!known) {
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send(errorBody(request, 500, 'INTERNAL_ERROR', 'Internal server error'));
  }
  const body = errorBody(request, known.statusCode, known.errorCode, known.message);
  const members = 'error_code' in body ? Object.entries(known.bodyMembers ?? {}) : [];
  if (members.length > 0) {
    // Members given as JSON text (a resource as its read writes it) are written as they are.
    const json = JSON.stringify(body).slice(0, -1) + members.map(([name, text]) => `,${JSON.stringify(name)}:${text}`).join('') + '}';
    return reply.code(known.statusCode).headers(known.headers).type('application/json; charset=utf-8').send(json);
  }
  return reply.code(known.statusCode).headers(known.headers).send(body);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error_code: 'NOT_FOUND', error_msg: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );
}
