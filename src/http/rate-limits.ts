import fp from 'fastify-plugin';
import rateLimit, { normalizeIP, type RateLimitOptions } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.ts';

const ONE_MINUTE_MS = 60_000;

type RateLimitGroup = 'device' | 'api';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Which limits a route counts against. Device routes (OKMs, which have no account) say
     * 'device'; other routes under /api/ and /v1/ are 'api'; the rest (probes, metrics, docs)
     * are not limited.
     */
    rateLimitGroup?: RateLimitGroup;
  }
}

// Keys each counter keeps, least recently used dropped first: memory stays bounded (a key is
// ~150 bytes), and a dropped key only starts its count again.
const SERIALS_KEPT = 250_000;
const CLIENTS_KEPT = 50_000;

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;
type Outcome = Awaited<ReturnType<Limiter>>;

const tooManyRequests = (outcome: Extract<Outcome, { isAllowed: false }>) => {
  const seconds = Math.max(1, outcome.ttlInSeconds);
  return new HttpError(429, 'TOO_MANY_REQUESTS', `Rate limit exceeded, retry in ${seconds} s`, { 'retry-after': String(seconds) });
};

const NOT_LIMITED = Promise.resolve();

/** Counts the request and refuses it when its key is over the limit. */
function count(limiter: Limiter | undefined, request: FastifyRequest): Promise<void> {
  if (!limiter) return NOT_LIMITED;
  return limiter(request).then((outcome) => {
    if (!outcome.isAllowed && outcome.isExceeded) throw tooManyRequests(outcome);
  });
}

/** Refuses the request when its key has used up the limit, without counting it. */
function check(limiter: Limiter | undefined, request: FastifyRequest): Promise<void> {
  if (!limiter) return NOT_LIMITED;
  return limiter(request, { increment: false }).then((outcome) => {
    if (!outcome.isAllowed && outcome.remaining === 0) throw tooManyRequests(outcome);
  });
}

const serialNumberOf = (request: FastifyRequest) => (request.params as { serialNumber?: string } | undefined)?.serialNumber;

/**
 * Per-client limits, counted in this process's memory (several processes each count their own
 * share), before authentication (a root onRequest hook runs before the routes' guards):
 * - device routes: per OKM serial number, and a per-IP ceiling high enough for a whole chain
 *   of stores behind one NAT address (firmware downloads, which name no serial, count there);
 * - API routes: per credential, so that customers behind one NAT do not share a budget; and
 *   per IP for requests without a credential or whose credential is refused (401), so that
 *   neither leaving the credential out nor changing it on every request escapes the limit.
 * A limit of 0 turns it off. Register before the routes: each route's group is set as it is added.
 */
async function rateLimitsPlugin(app: FastifyInstance): Promise<void> {
  const { deviceRateLimitPerMinute, deviceIpRateLimitPerMinute, apiRateLimitPerMinute } = app.settings;
  await app.register(rateLimit, { global: false, timeWindow: ONE_MINUTE_MS });

  const limiter = (max: number, cache: number, keyOf: (request: FastifyRequest) => string): Limiter | undefined => {
    if (max === 0) return undefined;
    const options: RateLimitOptions = { max, timeWindow: ONE_MINUTE_MS, cache, keyGenerator: keyOf };
    return app.createRateLimit(options);
  };
  const clientIp = (request: FastifyRequest) => normalizeIP(request.ip);
  const perSerialNumber = limiter(deviceRateLimitPerMinute, SERIALS_KEPT, (request) => serialNumberOf(request)!);
  const perDeviceIp = limiter(deviceIpRateLimitPerMinute, CLIENTS_KEPT, clientIp);
  const perCredential = limiter(apiRateLimitPerMinute, CLIENTS_KEPT, (request) => request.headers.authorization!);
  const perUnauthenticatedIp = limiter(apiRateLimitPerMinute, CLIENTS_KEPT, clientIp);

  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimitGroup !== undefined) return;
    if (route.url.startsWith('/api/') || route.url.startsWith('/v1/') || route.url.startsWith('/auth/')) route.config = { ...route.config, rateLimitGroup: 'api' };
  });
  const groupOf = (request: FastifyRequest) => request.routeOptions.config?.rateLimitGroup;

  /** The counting a request's group asks for; undefined when it asks for none. */
  const limitsOf = (request: FastifyRequest): Promise<void> | undefined => {
    switch (groupOf(request)) {
      case 'device': {
        const bySerialNumber = perSerialNumber && serialNumberOf(request) !== undefined ? () => count(perSerialNumber, request) : undefined;
        if (!perDeviceIp) return bySerialNumber?.();
        return bySerialNumber ? count(perDeviceIp, request).then(bySerialNumber) : count(perDeviceIp, request);
      }
      case 'api':
        if (request.headers.authorization === undefined) return count(perUnauthenticatedIp, request);
        return check(perUnauthenticatedIp, request).then(() => count(perCredential, request));
      default:
        return undefined;
    }
  };
  // A callback, not an async function: a request whose limits are off, or that has none, goes
  // on at once, and a poll pays for its own limiter's promise only.
  app.addHook('onRequest', (request, _reply, done) => {
    const limits = limitsOf(request);
    if (limits) limits.then(() => done(), done);
    else done();
  });
  // A refused credential counts against its address once the guard has said so. A callback,
  // not an async function, so that the other answers (a poll's) pay no promise here.
  app.addHook('onResponse', (request, reply, done) => {
    if (perUnauthenticatedIp && reply.statusCode === 401 && groupOf(request) === 'api' && request.headers.authorization !== undefined) {
      perUnauthenticatedIp(request).then(() => done(), done);
    } else done();
  });
}

export default fp(rateLimitsPlugin, { name: 'keyfleet-rate-limits' });
