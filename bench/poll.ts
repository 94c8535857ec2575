/**
 * Config-poll benchmark: a bare node:http server answering {} against keyfleet (SQLite, and
 * PostgreSQL when reachable) with 100 000 stored OKMs, under autocannon from this process.
 *
 *   npm run bench:poll -- [--sqlite] [--postgres] [--okms 100000] [--duration 10]
 *                         [--connections 100] [--cpu-prof DIR]
 *
 * With neither --sqlite nor --postgres both run. Everything listens on 127.0.0.1 only, and
 * every server is a child process so that the load generator does not share its event loop.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MIX, observedMix, requestPaths, seedFleet } from './fleet.ts';
import {
  BENCH_OPTIONS,
  WARM_UP_S,
  forEachBenchDatabase,
  measure,
  pathsLoad,
  printFigures,
  startBare,
  startKeyfleet,
  stop,
  type BenchDatabase,
  type Figures,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    okms: { type: 'string', default: '100000' },
    'cpu-prof': { type: 'string' },
  },
});
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);

const pollLoad = (paths: string[]) => pathsLoad(paths, CONNECTIONS, DURATION_S);
const configPaths = (configPath: string) => requestPaths(configPath, OKM_COUNT);

async function benchKeyfleet(database: BenchDatabase): Promise<Figures[]> {
  const { name, env } = database;
  const seeding = Date.now();
  await seedFleet(env, OKM_COUNT);
  console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
  const { port, child } = await startKeyfleet(env, { cpuProfileDir: options['cpu-prof'] && path.join(options['cpu-prof'], name) });
  try {
    console.log(`${name}: answers seen on a sample of 400 requests:`, await observedMix(port, configPaths('/api/v1/config')));
    const poll = await measure(`keyfleet ${name}`, port, pollLoad(configPaths('/api/v1/config')));
    // The bootstrap route does no database work: the framework's share of the cost.
    const bootstrap = await measure(`keyfleet ${name} bootstrap (no database)`, port, pollLoad(configPaths('/embeddedv1/kas/config')));
    return [poll, bootstrap];
  } finally {
    await stop(child);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const figures: Figures[] = [];

  const bare = await startBare();
  try {
    // The same requests as keyfleet gets, so that the load generator's own cost is the same.
    figures.push(await measure('bare node:http', bare.port, pollLoad(configPaths('/api/v1/config'))));
  } finally {
    await stop(bare.child);
  }

  await forEachBenchDatabase(options, async (database) => {
    figures.push(...(await benchKeyfleet(database)));
  });

  console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs, ${os.cpus().length} CPUs`);
  console.log('mix:', MIX.map((entry) => `${Math.round(entry.share * 100)}% ${entry.name}`).join('; '));
  printFigures(figures, () => figures[0]);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
