import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './errors.ts';
import { describeValidationError } from './validation.ts';

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

function toErrorReply(error: FastifyError | HttpError): ErrorReply | undefined {
  if (error instanceof HttpError) {
    return { statusCode: error.statusCode, errorCode: error.errorCode, message: error.message, headers: error.headers };
  }
  if (error.validation && error.validation.length > 0) {
    const message = describeValidationError(error.validationContext ?? 'body', error.validation[0] as never);
    return { statusCode: 400, errorCode: 'BAD_REQUEST', message, headers: {} };
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return { statusCode: status, errorCode: FASTIFY_CODES[status] ?? 'BAD_REQUEST', message: error.message, headers: {} };
  }
  return undefined;
}

/** The one place where errors become responses: `{error_code, error_msg}` JSON, never a stack. */
export function sendError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  const known = toErrorReply(error);
  if (!known) {
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error_code: 'INTERNAL_ERROR', error_msg: 'Internal server error' });
  }
  return reply.code(known.statusCode).headers(known.headers).send({ error_code: known.errorCode, error_msg: known.message });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error_code: 'NOT_FOUND', error_msg: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );
}
