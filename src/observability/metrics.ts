import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestDurations } from './request-durations.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's Prometheus registry: each capability registers its own metrics here. */
    metrics: Registry;
  }
}

/**
 * One registry per app instance (not prom-client's global one), so that several apps in one
 * process, as in the tests, each count only their own traffic.
 */
async function metricsPlugin(app: FastifyInstance): Promise<void> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  app.decorate('metrics', registry);

  const requestDurations = new RequestDurations(
    'keyfleet_http_request_duration_seconds',
    'HTTP requests by method, route pattern and status code',
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  );
  registry.registerMetric(requestDurations.asMetric());
  // A callback, not an async function: every request passes here (see json-bodies.ts).
  app.addHook('onResponse', (request, reply, done) => {
    requestDurations.observe(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  new Gauge({
    name: 'keyfleet_db_pool_connections',
    help: 'PostgreSQL connection pool: connections by state (total, idle, and requests waiting for one); absent on SQLite',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const pool = app.dialect.poolState();
      if (pool) for (const [state, count] of Object.entries(pool)) this.set({ state }, count);
    },
  });

  const documentation = {
    responses: { 200: { description: 'Prometheus text exposition format', content: { [registry.contentType.split(';')[0]!]: Type.String() } } },
  };
  app.get('/metrics', { logLevel: 'warn', config: { openapi: documentation }, schema: { operationId: 'getMetrics', summary: 'Prometheus metrics' } }, async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}

export default fp(metricsPlugin, { name: 'keyfleet-metrics' });
