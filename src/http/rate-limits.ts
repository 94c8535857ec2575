import fp from 'fastify-plugin';
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.ts';
import { FixedWindowLimit } from './fixed-window-limit.ts';

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

const tooManyRequests = (seconds: number) =>
  new HttpError(429, 'TOO_MANY_REQUESTS', `Rate limit exceeded, retry in ${seconds} s`, { 'retry-after': String(seconds) });

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
  const limit = (max: number, keysKept: number) => (max === 0 ? undefined : new FixedWindowLimit(max, ONE_MINUTE_MS, keysKept));
  const perSerialNumber = limit(deviceRateLimitPerMinute, SERIALS_KEPT);
  const perDeviceIp = limit(deviceIpRateLimitPerMinute, CLIENTS_KEPT);
  const perCredential = limit(apiRateLimitPerMinute, CLIENTS_KEPT);
  const perUnauthenticatedIp = limit(apiRateLimitPerMinute, CLIENTS_KEPT);
  // @fastify/rate-limit's: an IPv4-mapped IPv6 address as IPv4, an IPv6 one as its /64 subnet.
  const clientIp = (request: FastifyRequest) => normalizeIP(request.ip);

  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimitGroup !== undefined) return;
    if (route.url.startsWith('/api/') || route.url.startsWith('/v1/') || route.url.startsWith('/auth/')) route.config = { ...route.config, rateLimitGroup: 'api' };
  });
  const groupOf = (request: FastifyRequest) => request.routeOptions.config?.rateLimitGroup;

  /** Counts the request against the limits of its group: the seconds until it may try again when one refuses it, else undefined. */
  const refusalOf = (request: FastifyRequest): number | undefined => {
    switch (groupOf(request)) {
      case 'device': {
        const serialNumber = serialNumberOf(request);
        return perDeviceIp?.count(clientIp(request)) ?? (serialNumber === undefined ? undefined : perSerialNumber?.count(serialNumber));
      }
      case 'api': {
        const { authorization } = request.headers;
        if (authorization === undefined) return perUnauthenticatedIp?.count(clientIp(request));
        return perUnauthenticatedIp?.check(clientIp(request)) ?? perCredential?.count(authorization);
      }
      default:
        return undefined;
    }
  };
  app.addHook('onRequest', (request, _reply, done) => {
    const refusedFor = refusalOf(request);
    // The error handler renders HttpError; Fastify's type for `done` names only its own errors.
    done(refusedFor === undefined ? undefined : (tooManyRequests(refusedFor) as unknown as FastifyError));
  });
  // A refused credential counts against its address once the guard has said so.
  app.addHook('onResponse', (request, reply, done) => {
    if (perUnauthenticatedIp && reply.statusCode === 401 && groupOf(request) === 'api' && request.headers.authorization !== undefined) {
      perUnauthenticatedIp.count(clientIp(request));
    }
    done();
  });
}

export default fp(rateLimitsPlugin, { name: 'keyfleet-rate-limits' });
