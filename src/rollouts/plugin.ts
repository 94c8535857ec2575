import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { createOutageLog, isDatabaseUnavailable } from '../db/connection-errors.ts';
import { rolloutEventSink } from './events.ts';
import rolloutPreviewRoutes from './preview-routes.ts';
import rolloutRoutes from './routes.ts';
import { sweepRollouts } from './sweep.ts';

/** Rollouts (contract §13): the API, and this process's share of the sweep. */
async function rolloutsPlugin(app: FastifyInstance): Promise<void> {
  await app.register(rolloutRoutes, { prefix: '/api/v1/rollouts', emit: rolloutEventSink });
  await app.register(rolloutPreviewRoutes, { prefix: '/api/v1/rollouts' });
  const intervalMs = app.settings.rolloutSweepIntervalMs;
  if (intervalMs === 0) return;
  const outageLog = createOutageLog(app.log);
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> = Promise.resolve();
  const sweep = () => {
    sweeping = sweepRollouts(app.db, app.dialect, rolloutEventSink, Date.now())
      .catch((error: unknown) => (isDatabaseUnavailable(error) ? outageLog('rollout sweep failed', error) : app.log.error({ err: error }, 'rollout sweep failed')))
      .finally(() => (timer = setTimeout(sweep, intervalMs).unref()));
  };
  app.addHook('onReady', async () => void (timer = setTimeout(sweep, intervalMs).unref()));
  app.addHook('onClose', async () => {
    clearTimeout(timer);
    await sweeping;
    clearTimeout(timer);
  });
}

export default fp(rolloutsPlugin, { name: 'keyfleet-rollouts' });
