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
import {
  freePort,
  measure,
  MIX,
  observedMix,
  requestPaths,
  seedFleet,
  startBare,
  startKeyfleet,
  stop,
  waitUntilServing,
  withFreshDatabase,
  type DatabaseKind,
  type Figures,
  type LoadOptions,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    okms: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    'cpu-prof': { type: 'string' },
  },
});
const OKM_COUNT = Number(options.okms);
const LOAD: LoadOptions = { connections: Number(options.connections), warmUpSeconds: 2, seconds: Number(options.duration) };

async function benchKeyfleet(name: DatabaseKind, env: Record<string, string>): Promise<Figures[]> {
  const seeding = Date.now();
  await seedFleet(env, OKM_COUNT);
  console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
  const port = await freePort();
  const child = startKeyfleet(port, env, options['cpu-prof'] ? { cpuProfileDir: path.join(options['cpu-prof'], name) } : {});
  try {
    await waitUntilServing(`http://127.0.0.1:${port}/embeddedv1/kas/config`, child);
    console.log(`${name}: answers seen on a sample of 400 requests:`, await observedMix(port, requestPaths('/api/v1/config', OKM_COUNT)));
    const poll = await measure(`keyfleet ${name}`, port, requestPaths('/api/v1/config', OKM_COUNT), LOAD);
    // The bootstrap route does no database work: the framework's share of the cost.
    const bootstrap = await measure(`keyfleet ${name} bootstrap (no database)`, port, requestPaths('/embeddedv1/kas/config', OKM_COUNT), LOAD);
    return [poll, bootstrap];
  } finally {
    await stop(child);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const both = !options.sqlite && !options.postgres;
  const figures: Figures[] = [];

  const barePort = await freePort();
  const bare = startBare(barePort);
  try {
    await waitUntilServing(`http://127.0.0.1:${barePort}/`, bare);
    // The same requests as keyfleet gets, so that the load generator's own cost is the same.
    figures.push(await measure('bare node:http', barePort, requestPaths('/api/v1/config', OKM_COUNT), LOAD));
  } finally {
    await stop(bare);
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    if (!options[kind] && !both) continue;
    figures.push(...((await withFreshDatabase(kind, options[kind], (env) => benchKeyfleet(kind, env))) ?? []));
  }

  const bareRate = figures[0]!.requestsPerSecond;
  console.log(`\n${LOAD.connections} connections, ${LOAD.seconds} s per target after ${LOAD.warmUpSeconds} s warm-up, ${OKM_COUNT} OKMs, ${os.cpus().length} CPUs`);
  console.log('mix:', MIX.map((entry) => `${Math.round(entry.share * 100)}% ${entry.name}`).join('; '));
  console.table(
    figures.map((entry) => ({
      target: entry.target,
      'req/s': Math.round(entry.requestsPerSecond),
      'p50 ms': entry.p50,
      'p99 ms': entry.p99,
      'ratio to bare': (entry.requestsPerSecond / bareRate).toFixed(2),
      'non-2xx': entry.non2xx,
      errors: entry.errors,
    })),
  );
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
