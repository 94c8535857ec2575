/**
 * How long the bench fleet takes to store on PostgreSQL (bench/fleet.ts seedFleet, which
 * bench/poll.ts and bench/events.ts load): OKMs copied from their templates by INSERT … SELECT
 * with the page-bucket triggers on, then the buckets cut.
 *
 *   npx tsx bench/seed-fleet-time.ts [--okms 100000] [--sqlite] [--postgres]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { seedFleet } from './fleet.ts';
import { BENCH_OPTIONS, forEachBenchDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: { sqlite: BENCH_OPTIONS.sqlite, postgres: BENCH_OPTIONS.postgres, okms: { type: 'string', default: '100000' } },
});

await forEachBenchDatabase(options, async ({ name, env }) => {
  const started = Date.now();
  await seedFleet(env, Number(options.okms));
  console.log(`${name}: seedFleet of ${options.okms} OKMs in ${((Date.now() - started) / 1000).toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(2)})`);
});
