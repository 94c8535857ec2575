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

export interface StatusEventsOptions {
  /** Run a dispatcher in this process (started when the app is ready, stopped when it closes). */
  dispatch: boolean;
}

/** Status events (SPEC §6): metrics, and the dispatcher when this process delivers. */
async function statusEventsPlugin(app: FastifyInstance, options: StatusEventsOptions): Promise<void> {
  const metrics = registerStatusEventMetrics(app.metrics, () => countPendingEvents(app.db));
  let dispatcher: Dispatcher | undefined;
  if (options.dispatch) {
    dispatcher = createDispatcher({ db: app.db, dialect: app.dialect, masterKey: app.masterKey, settings: app.settings, metrics, log: app.log });
    app.addHook('onReady', async () => dispatcher!.start());
    // Graceful shutdown: the deliveries in flight finish and their outcomes are written first.
    app.addHook('onClose', async () => dispatcher!.stop());
  }
  app.decorate('statusEvents', {
    queued(count: number) {
      metrics.queued.inc(count);
      dispatcher?.wake();
    },
  });
}

export default fp(statusEventsPlugin, { name: 'keyfleet-status-events', dependencies: ['keyfleet-metrics'] });
