import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { createOutageLog, isDatabaseUnavailable } from '../db/connection-errors.ts';
import { DELTAS_PER_FOLD, foldFleetSummaryDeltas } from './fleet-summary-counts.ts';

/** The pause between two steps while deltas remain after a full one (a bulk load): writers and reads run between them. */
const PAUSE_BETWEEN_STEPS_MS = 50;

/**
 * The fleet summary folder of this server process: every fleetSummaryFoldIntervalMs (and at
 * once when the process is ready) it folds the deltas the triggers on okms appended into the
 * counts (fleet-summary-counts.ts), a bounded step at a time, so that a summary adds up few
 * of them. Each process runs one; while one folds, the others' steps skip.
 */
async function fleetSummaryFolderPlugin(app: FastifyInstance): Promise<void> {
  const intervalMs = app.settings.fleetSummaryFoldIntervalMs;
  if (intervalMs === 0) return;
  const outageLog = createOutageLog(app.log);
  let timer: NodeJS.Timeout | undefined;
  let stepping: Promise<void> = Promise.resolve();
  let closing = false;
  const step = () => {
    stepping = foldFleetSummaryDeltas(app.db, app.dialect)
      .then((taken) => (taken === DELTAS_PER_FOLD ? PAUSE_BETWEEN_STEPS_MS : intervalMs))
      .catch((error: unknown) => {
        if (isDatabaseUnavailable(error)) outageLog('fleet summary folder failed', error);
        else app.log.error({ err: error }, 'fleet summary folder failed');
        return intervalMs;
      })
      .then((delayMs) => {
        if (!closing) timer = setTimeout(step, delayMs).unref();
      });
  };
  app.addHook('onReady', async () => void (timer = setTimeout(step, 0).unref()));
  app.addHook('onClose', async () => {
    closing = true;
    clearTimeout(timer);
    await stepping;
  });
}

export default fp(fleetSummaryFolderPlugin, { name: 'keyfleet-fleet-summary-folder' });
