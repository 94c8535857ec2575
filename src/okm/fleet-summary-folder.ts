import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { repeatStep } from '../db/repeating-step.ts';
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
  repeatStep(app, 'fleet summary folder', intervalMs, async () =>
    (await foldFleetSummaryDeltas(app.db, app.dialect)) === DELTAS_PER_FOLD ? PAUSE_BETWEEN_STEPS_MS : intervalMs,
  );
}

export default fp(fleetSummaryFolderPlugin, { name: 'keyfleet-fleet-summary-folder' });
