import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createOutageLog, isDatabaseUnavailable, OUTAGE_LOG_INTERVAL_MS } from '../db/connection-errors.ts';
import { MasterKeyMismatchError } from '../secrets/key-ring.ts';
import { HttpError } from './errors.ts';
import { describeValidationError } from './validation.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * How this route's errors are rendered: the default `{error_code, error_msg}`, or
     * `'dlock'` for `{status, msg}` (the seed's DLock resource under /v1).
     */
    errorShape?: 'dlock';
  }
}

interface ErrorReply {
  statusCode: number;
  errorCode: string;
  message: string;
  headers: Record<string, string>;
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

/**
 * What a client reads when the server's master key no longer opens the database's data keys:
 * another process changed the master key and this one has not been restarted with the new one
 * (MASTER_KEY) or could not read it from its key file. Other servers, or this one once
 * restarted, answer; /readyz is 503 meanwhile, so that a load balancer stops sending here.
 */
export const KEY_RING_UNAVAILABLE = 'The master key has changed and this server does not hold the new one yet, try again later';

/** The key ring's refusal, wherever it is in the error's causes. */
function masterKeyMismatchOf(error: unknown, depth = 0): MasterKeyMismatchError | undefined {
  if (error instanceof MasterKeyMismatchError) return error;
  return error instanceof Error && depth < 3 ? masterKeyMismatchOf(error.cause, depth + 1) : undefined;
}

/** One warning per OUTAGE_LOG_INTERVAL_MS for the process while requests fail for want of the master key, with the count it stands for. */
let keyRingWarnedAt = -Infinity;
let keyRingFailuresSinceWarning = 0;
function logKeyRingFailure(error: MasterKeyMismatchError, request: FastifyRequest): void {
  const now = Date.now();
  if (now - keyRingWarnedAt < OUTAGE_LOG_INTERVAL_MS) {
    keyRingFailuresSinceWarning++;
    return;
  }
  const alsoFailed = keyRingFailuresSinceWarning;
  keyRingWarnedAt = now;
  keyRingFailuresSinceWarning = 0;
  request.log.warn(
    { keyRing: error.message, ...(alsoFailed > 0 ? { alsoFailed } : {}) },
    'requests failed: this server does not hold the master key the database names; restart it with the new MASTER_KEY',
  );
}

function toErrorReply(error: FastifyError | HttpError, request: FastifyRequest): ErrorReply | undefined {
  if (error instanceof HttpError) {
    return { statusCode: error.statusCode, errorCode: error.errorCode, message: error.message, headers: error.headers };
  }
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
 * down or out of reach, and a master key that no longer opens the data keys, are a 503 with
 * Retry-After (the request may succeed later, here or on another server), logged once per interval.
 */
export function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  if (isDatabaseUnavailable(error)) {
    logOutage('requests failed', error, request.log);
    return reply
      .code(503)
      .header('retry-after', RETRY_AFTER_SECONDS)
      .send(errorBody(request, 503, 'DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE));
  }
  const mismatch = masterKeyMismatchOf(error);
  if (mismatch) {
    logKeyRingFailure(mismatch, request);
    return reply.code(503).header('retry-after', RETRY_AFTER_SECONDS).send(errorBody(request, 503, 'KEY_RING_UNAVAILABLE', KEY_RING_UNAVAILABLE));
  }
  const known = toErrorReply(error, request);
  if (!known) {
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send(errorBody(request, 500, 'INTERNAL_ERROR', 'Internal server error'));
  }
  return reply.code(known.statusCode).headers(known.headers).send(errorBody(request, known.statusCode, known.errorCode, known.message));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error_code: 'NOT_FOUND', error_msg: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );
}
