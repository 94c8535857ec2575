import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { cutOversizedBuckets } from './page-buckets.ts';
import { PAGED_LISTS } from './paged-lists.ts';
import { repeatStep } from './repeating-step.ts';

/** The pause between two steps while buckets remain to cut: writers and page reads run between them. */
const PAUSE_BETWEEN_STEPS_MS = 100;

/**
 * The bucket keeper of this server process: cuts the oversized page buckets (page-buckets.ts)
 * one bounded step at a time, so that no page read has to. It looks every
 * pageBucketKeeperIntervalMs (at once when the process is ready: a bulk load or a migration
 * may have left whole scopes as one bucket), and while it finds buckets to cut, steps again
 * after a short pause. Each process runs one; a step that finds its bucket already cut by
 * another skips it.
 */
async function pageBucketKeeperPlugin(app: FastifyInstance): Promise<void> {
  const intervalMs = app.settings.pageBucketKeeperIntervalMs;
  if (intervalMs === 0) return;
  repeatStep(app, 'page bucket keeper', intervalMs, async () => ((await cutOversizedBuckets(app.db, PAGED_LISTS)) > 0 ? PAUSE_BETWEEN_STEPS_MS : intervalMs));
}

export default fp(pageBucketKeeperPlugin, { name: 'keyfleet-page-bucket-keeper' });
