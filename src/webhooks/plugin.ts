import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { createDispatcher, type Dispatcher } from './dispatcher.ts';
import { registerStatusEventMetrics } from './metrics.ts';
import { countPendingEvents } from './queue-repository.ts';

declare module 'fastify' {
  interface FastifyInstance {
    statusEvents: {
      /** Called after a poll's events have committed: counts them and wakes this process's dispatcher. */
      queued(count: number): void;
    };
  }
}

/** Requests in progress at once from which this process counts as saturated by its clients. */
const BUSY_REQUESTS_IN_PROGRESS = 32;
/** How long the process counts as busy after it last had that many. */
const BUSY_HOLD_MS = 500;

export interface StatusEventsOptions {
  /** Run a dispatcher in this process (started when the app is ready, stopped when it closes). */
  dispatch: boolean;
}

/** Status events (contract §6): metrics, and the dispatcher when this process delivers. */
async function statusEventsPlugin(app: FastifyInstance, options: StatusEventsOptions): Promise<void> {
  const metrics = registerStatusEventMetrics(app.metrics, () => countPendingEvents(app.db));
  let dispatcher: Dispatcher | undefined;
  if (options.dispatch) {
    // Devices first: while requests queue up in this process, its dispatcher takes small batches
    // (the queue keeps only the newest status per OKM and URL, so waiting costs no extra rows).
    let requestsInProgress = 0;
    let lastSaturatedAt = -Infinity;
    // One listener for every response, which closes once: no closure, nor once()'s wrapper, a request.
    const requestEnded = () => requestsInProgress--;
    app.addHook('onRequest', (request, reply, done) => {
      // Group commit answers a batch of polls at once, so the count drops to zero between
      // batches: the server stays busy for a while after it last had many requests in progress.
      if (++requestsInProgress >= BUSY_REQUESTS_IN_PROGRESS) lastSaturatedAt = Date.now();
      reply.raw.on('close', requestEnded);
      done();
    });
    dispatcher = createDispatcher({
      db: app.db,
      dialect: app.dialect,
      keyRing: app.keyRing,
      settings: app.settings,
      metrics,
      log: app.log,
      serverBusy: () => Date.now() - lastSaturatedAt < BUSY_HOLD_MS,
    });
    app.addHook('onReady', async () => dispatcher!.start());
    // Graceful shutdown: the deliveries in flight finish (for a bounded time, see
    // STOP_DELIVERIES_AFTER_MS) and their outcomes are written first. The stop begins with the
    // close, beside the drain of the requests: onClose hooks run only once every connection has
    // ended, and the two waits in a row would pass the 10 s a stop is allowed.
    let stopped: Promise<void> | undefined;
    app.addHook('preClose', async () => {
      stopped = dispatcher!.stop();
      // Awaited in onClose; a failure is reported there, not as an unhandled rejection meanwhile.
      stopped.catch(() => {});
    });
    app.addHook('onClose', async () => stopped ?? dispatcher!.stop());
  }
  app.decorate('statusEvents', {
    queued(count: number) {
      metrics.queued.inc(count);
      dispatcher?.wake();
    },
  });
}

export default fp(statusEventsPlugin, { name: 'keyfleet-status-events', dependencies: ['keyfleet-metrics'] });
