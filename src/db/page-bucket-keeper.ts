import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { keepPageBuckets } from './page-buckets.ts';
import { PAGED_LISTS } from './paged-lists.ts';
import { repeatStep } from './repeating-step.ts';

/** The pause between two steps while deltas remain to fold or buckets to cut: writers and page reads run between them. */
const PAUSE_BETWEEN_STEPS_MS = 100;

/**
 * The bucket keeper of this server process: folds the pending deltas into the page buckets and
 * cuts the oversized ones (page-buckets.ts), one bounded step at a time, so that no page read
 * has to. It looks every pageBucketKeeperIntervalMs (at once when the process is ready: a bulk
 * load or a migration may have left whole scopes as one bucket), and while it finds work, steps
 * again after a short pause. Each process runs one; while one steps, the others' steps skip.
 */
async function pageBucketKeeperPlugin(app: FastifyInstance): Promise<void> {
  const intervalMs = app.settings.pageBucketKeeperIntervalMs;
  if (intervalMs === 0) return;
  repeatStep(app, 'page bucket keeper', intervalMs, async () => ((await keepPageBuckets(app.db, app.dialect, PAGED_LISTS)) > 0 ? PAUSE_BETWEEN_STEPS_MS : intervalMs));
}

export default fp(pageBucketKeeperPlugin, { name: 'keyfleet-page-bucket-keeper' });
