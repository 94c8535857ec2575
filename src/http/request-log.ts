import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Query parameters whose values are secrets, by decoded name, in lower case: the installer
 * code an OKM sends on every poll, and the credentials a misconfigured client may put in a URL.
 */
// The sign-in callback's code and state, and what a provider may add, are credentials too.
const SECRET_QUERY_PARAMETERS = new Set(['installcode', 'access_token', 'token', 'api_key', 'apikey', 'code', 'state', 'id_token', 'session_state']);

/** A query parameter's name as the query-string parser sees it: '+' is a space, %XX a byte (invalid escapes stay as they are). */
const decodedName = (name: string) =>
  name.replace(/\+/g, ' ').replace(/%([0-9a-f]{2})/gi, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** Fastify's genReqId: the caller's (or proxy's) X-Request-Id when it is a sane token, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const offered = request.headers[REQUEST_ID_HEADER];
  return typeof offered === 'string' && ACCEPTABLE_REQUEST_ID.test(offered) ? offered : randomUUID();
}

const LEVELS_THAT_LOG_INFO = new Set(['info', 'debug', 'trace']);
const LEVELS_THAT_LOG_DEBUG = new Set(['debug', 'trace']);

/** How often the device calls of the interval are summed up in one info line. */
export const DEVICE_CALL_SUMMARY_MS = 60_000;

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
 *
 * Device calls (routes of rateLimitGroup 'device': polls, bootstrap, audit posts) are the
 * fleet's heartbeat, thousands a second: each is logged at debug, and an info line sums them
 * up every DEVICE_CALL_SUMMARY_MS (calls by status, slowest), so that a fleet's log at the
 * default level stays readable and costs next to nothing. Errors are always logged.
 */
declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Who made the request, once its credential is verified (contract §17: a person, an API
     * token, a DLock API key): written in the request's log line. Set by the capability that
     * verifies the credential; the shape is the auth capability's Actor.
     */
    actor: { kind: string; id: string; name: string } | undefined;
  }
}

export class RequestLogController extends LogController {
  #deviceCalls = 0;
  #deviceStatuses: Record<string, number> = {};
  #slowestDeviceCallMs = 0;

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const deviceCall = request.routeOptions?.config?.rateLimitGroup === 'device';
    if (deviceCall) this.#countDeviceCall(reply);
    if (!error && !(deviceCall ? LEVELS_THAT_LOG_DEBUG : LEVELS_THAT_LOG_INFO).has(reply.log.level)) return;
    const line = {
      req: { method: request.method, url: redactUrl(request.url), route: request.routeOptions?.url, remoteAddress: request.ip },
      res: { statusCode: reply.statusCode },
      responseTime: Math.round(reply.elapsedTime * 10) / 10,
      ...(request.actor === undefined ? {} : { actor: request.actor }),
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else if (deviceCall) reply.log.debug(line, 'request completed');
    else reply.log.info(line, 'request completed');
  }

  #countDeviceCall(reply: FastifyReply): void {
    this.#deviceCalls += 1;
    const status = String(reply.statusCode);
    this.#deviceStatuses[status] = (this.#deviceStatuses[status] ?? 0) + 1;
    this.#slowestDeviceCallMs = Math.max(this.#slowestDeviceCallMs, reply.elapsedTime);
  }

  /** Logs the device calls since the last summary in one info line (none if there were none), and starts counting afresh. */
  summarizeDeviceCalls(log: FastifyInstance['log'], intervalMs: number): void {
    if (this.#deviceCalls === 0) return;
    log.info(
      { deviceCalls: this.#deviceCalls, statuses: this.#deviceStatuses, slowestMs: Math.round(this.#slowestDeviceCallMs * 10) / 10, intervalS: intervalMs / 1000 },
      'device calls',
    );
    this.#deviceCalls = 0;
    this.#deviceStatuses = {};
    this.#slowestDeviceCallMs = 0;
  }
}

/** Logs the device call summary of `controller` every DEVICE_CALL_SUMMARY_MS while the server runs, and once more when it closes. */
export function registerDeviceCallSummary(app: FastifyInstance, controller: RequestLogController, intervalMs = DEVICE_CALL_SUMMARY_MS): void {
  let timer: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    timer = setInterval(() => controller.summarizeDeviceCalls(app.log, intervalMs), intervalMs).unref();
  });
  app.addHook('onClose', async () => {
    clearInterval(timer);
    controller.summarizeDeviceCalls(app.log, intervalMs);
  });
}

/** The request id on every response, so that a caller can quote it. */
export function registerRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
}

/** request.actor, empty until a credential is verified. */
export function registerRequestActor(app: FastifyInstance): void {
  app.decorateRequest('actor', undefined);
}
