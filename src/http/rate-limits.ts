import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from './errors.ts';

const ONE_MINUTE_MS = 60_000;

type Limited = { group: 'device' | 'api'; max: number };

/**
 * Per-client limits, counted in this process's memory (several processes each count their
 * own share). Device routes (config poll, audit intake) are limited per client IP: OKMs have
 * no credential. API routes are limited per credential, so that customers behind one NAT do
 * not share a budget, and per IP when a request has none. Probes, metrics and docs are not
 * limited. A limit of 0 turns that group off.
 */
async function rateLimitsPlugin(app: FastifyInstance): Promise<void> {
  const { configPath, auditUrl, deviceRateLimitPerMinute, apiRateLimitPerMinute } = app.settings;
  const devicePrefixes = [`${configPath}/`, `${auditUrl}/`];

  function limitOf(request: FastifyRequest): Limited | undefined {
    const route = request.routeOptions.url;
    if (route === undefined) return undefined;
    if (devicePrefixes.some((prefix) => route.startsWith(prefix))) return { group: 'device', max: deviceRateLimitPerMinute };
    if (route.startsWith('/api/') || route.startsWith('/v1/')) return { group: 'api', max: apiRateLimitPerMinute };
    return undefined;
  }

  await app.register(rateLimit, {
    global: true,
    timeWindow: ONE_MINUTE_MS,
    allowList: (request) => !limitOf(request)?.max,
    max: (request) => limitOf(request)!.max,
    keyGenerator: (request) => {
      const credential = limitOf(request)?.group === 'api' ? request.headers.authorization : undefined;
      return credential ? `api:${credential}` : `${limitOf(request)?.group}:${request.ip}`;
    },
    // Within the limit, no headers: devices and clients do not read them, and every poll would carry them.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    errorResponseBuilder: (_request, context) => new HttpError(429, 'TOO_MANY_REQUESTS', `Rate limit exceeded, retry in ${context.after}`),
  });
}

export default fp(rateLimitsPlugin, { name: 'keyfleet-rate-limits' });
