import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.ts';

const ONE_MINUTE_MS = 60_000;

type RateLimitGroup = 'device' | 'api';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which rate limit a route counts against, decided once when it is registered; none when absent. */
    rateLimitGroup?: RateLimitGroup;
  }
}

/**
 * Per-client limits, counted in this process's memory (several processes each count their
 * own share). Device routes (config poll, audit intake) are limited per client IP: OKMs have
 * no credential. API routes are limited per credential, so that customers behind one NAT do
 * not share a budget, and per IP when a request has none. Probes, metrics and docs are not
 * limited. A limit of 0 turns that group off. Register before the routes: each route's group
 * is set as it is added.
 */
async function rateLimitsPlugin(app: FastifyInstance): Promise<void> {
  const { configPath, auditUrl, deviceRateLimitPerMinute, apiRateLimitPerMinute } = app.settings;
  const devicePrefixes = [`${configPath}/`, `${auditUrl}/`];
  const perMinute: Record<RateLimitGroup, number> = { device: deviceRateLimitPerMinute, api: apiRateLimitPerMinute };

  function groupOf(url: string): RateLimitGroup | undefined {
    if (devicePrefixes.some((prefix) => url.startsWith(prefix))) return 'device';
    if (url.startsWith('/api/') || url.startsWith('/v1/')) return 'api';
    return undefined;
  }
  app.addHook('onRoute', (route) => {
    const group = groupOf(route.url);
    if (group && perMinute[group] > 0) route.config = { ...route.config, rateLimitGroup: group };
  });
  const groupOfRequest = (request: FastifyRequest) => request.routeOptions.config?.rateLimitGroup;

  await app.register(rateLimit, {
    global: true,
    timeWindow: ONE_MINUTE_MS,
    allowList: (request) => groupOfRequest(request) === undefined,
    max: (request) => perMinute[groupOfRequest(request)!],
    keyGenerator: (request) => {
      const group = groupOfRequest(request);
      const credential = group === 'api' ? request.headers.authorization : undefined;
      return credential ? `api:${credential}` : `${group}:${request.ip}`;
    },
    // Within the limit, no headers: devices and clients do not read them, and every poll would carry them.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    errorResponseBuilder: (_request, context) => new HttpError(429, 'TOO_MANY_REQUESTS', `Rate limit exceeded, retry in ${context.after}`),
  });
}

export default fp(rateLimitsPlugin, { name: 'keyfleet-rate-limits' });
