import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Query parameters whose values are secrets, by decoded name, in lower case: the installer
 * code an OKM sends on every poll, and the credentials a misconfigured client may put in a URL.
 */
const SECRET_QUERY_PARAMETERS = new Set(['installcode', 'access_token', 'token', 'api_key', 'apikey']);

/** A query parameter's name as the query-string parser sees it: '+' is a space, %XX a byte (invalid escapes stay as they are). */
const decodedName = (name: string) =>
  name.replace(/\+/g, ' ').replace(/%([0-9a-f]{2})/gi, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** Fastify's genReqId: the caller's (or proxy's) X-Request-Id when it is a sane token, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const offered = request.headers[REQUEST_ID_HEADER];
  return typeof offered === 'string' && ACCEPTABLE_REQUEST_ID.test(offered) ? offered : randomUUID();
}

const LEVELS_THAT_LOG_INFO = new Set(['info', 'debug', 'trace']);

/** The URL with the value of every secret query parameter replaced, whatever percent-encoding its name uses. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const redacted = url
    .slice(queryStart + 1)
    .split('&')
    .map((pair) => {
      const nameEnd = pair.indexOf('=');
      const name = nameEnd === -1 ? pair : pair.slice(0, nameEnd);
      return SECRET_QUERY_PARAMETERS.has(decodedName(name).toLowerCase()) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, queryStart)}?${redacted.join('&')}`;
}

/**
 * One log line per request, when the response is done, with the URL's secrets redacted
 * (Fastify's default writes two lines and logs the raw URL). Headers and bodies are never logged.
 */
export class RequestLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && !LEVELS_THAT_LOG_INFO.has(reply.log.level)) return;
    const line = {
      req: { method: request.method, url: redactUrl(request.url), route: request.routeOptions?.url, remoteAddress: request.ip },
      res: { statusCode: reply.statusCode },
      responseTime: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** The request id on every response, so that a caller can quote it. */
export function registerRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
}
