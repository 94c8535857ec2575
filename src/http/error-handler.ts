import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createOutageLog, isDatabaseUnavailable } from '../db/connection-errors.ts';
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
const DATABASE_RETRY_AFTER_SECONDS = '5';

/** One for the process: each plugin of an app has a server instance of its own. */
const logOutage = createOutageLog();

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
 * down or out of reach is a 503 (the request may succeed later), logged once per interval.
 */
export function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  if (isDatabaseUnavailable(error)) {
    logOutage('requests failed', error, request.log);
    return reply
      .code(503)
      .header('retry-after', DATABASE_RETRY_AFTER_SECONDS)
      .send(errorBody(request, 503, 'DATABASE_UNAVAILABLE', DATABASE_UNAVAILABLE));
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
