import type { FastifyError, FastifyInstance } from 'fastify';
import { RETRY_AFTER_SECONDS } from './error-handler.ts';
import { HttpError } from './errors.ts';

/** What a request that arrives while the server drains reads: another server (or this one, restarted) answers it. */
export const SHUTTING_DOWN = 'Server is shutting down, try again later';

/**
 * Requests that arrive while the server stops (on keep-alive connections that were busy when
 * the drain began: idle ones are closed) get a 503 with Retry-After in the route family's error
 * shape, through the central error handler. Fastify's own answer (`return503OnClosing`, off in
 * server.ts) is JSON without charset and in neither shape. Fastify sends `Connection: close`
 * with it, so the client opens its next connection elsewhere.
 */
export function registerDrainAnswer(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!draining) return done();
    // The error handler renders HttpError; Fastify's type for `done` names only its own errors.
    done(new HttpError(503, 'SHUTTING_DOWN', SHUTTING_DOWN, { 'retry-after': RETRY_AFTER_SECONDS }) as unknown as FastifyError);
  });
}
