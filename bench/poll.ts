/**
 * Config-poll benchmark: a bare node:http server answering {} against keyfleet (SQLite, and
 * PostgreSQL when reachable) with 100 000 stored OKMs, under autocannon from this process.
 *
 *   npm run bench:poll -- [--sqlite] [--postgres] [--okms 100000] [--duration 10]
 *                         [--connections 100] [--workers 1,2] [--order fleet|random] [--cpu-prof DIR]
 *                         [--no-enrolment-wave] [--open-loop 2000,5000|none]
 *
 * With neither --sqlite nor --postgres both run. Besides the polls it records what the fleet's
 * size costs: seeding time, database size, the server's start (spawn to /readyz 200) and RSS,
 * and the latency of the admin OKM list and fleet summary. keyfleet runs compiled, as `npm
 * start` runs it (the bench builds dist/ first): through tsx, each start took about a second
 * more to load. `--workers` lists the process counts to poll with (`serve --workers N`),
 * PostgreSQL only above 1. `--order` (bench/fleet.ts PollOrder): the OKMs poll in their fleet's
 * order, one interval after their last poll (the default), or each request a random OKM, the
 * worst case for the indexes keyed by time. Everything listens on 127.0.0.1 only, and every
 * server is a child process so that the load generator does not share its event loop. The
 * server runs as `npm start` does, at the default log level (its output to /dev/null); only the
 * rate limits are raised. After the steady polls, an enrolment wave (--no-enrolment-wave: none)
 * enrols as many new OKMs through first polls, and the 8 s right after it are measured.
 * `--open-loop RATES`: after the closed-loop polls, the bare server and keyfleet (one process)
 * each get the same polls sent on a fixed schedule at each rate (bench/open-loop.ts), over up
 * to --connections keep-alive connections, latency counted from when each request was due.
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeCursor } from '../src/db/cursor-pages.ts';
import { OKM_PAGES } from '../src/okm/admin-repository.ts';
import { measureOpenLoop, openLoopLine, openLoopRates, type OpenLoopFigures } from './open-loop.ts';
import { MIX, observedMix, POLL_ORDER_OPTION, pollOrderOf, requestPaths, seedFleet, serialOf } from './fleet.ts';
import {
  BENCH_OPTIONS,
  WARM_UP_S,
  buildServer,
  databaseBytes,
  forEachBenchDatabase,
  keyfleetCli,
  median,
  measure,
  pathsLoad,
  printFigures,
  startBare,
  startKeyfleetTimed,
  stop,
  treeRssBytes,
  withDb,
  type BenchDatabase,
  type Figures,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    okms: { type: 'string', default: '100000' },
    workers: { type: 'string', default: '1' },
    order: POLL_ORDER_OPTION,
    'cpu-prof': { type: 'string' },
    'enrolment-wave': { type: 'boolean', default: true },
    'open-loop': { type: 'string', default: '2000,5000' },
  },
  allowNegative: true,
});
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const WORKER_COUNTS = options.workers.split(',').map(Number);
if (!WORKER_COUNTS.every((count) => Number.isInteger(count) && count >= 1)) throw new Error(`--workers: expected process counts such as 1,2, got "${options.workers}"`);
const OPEN_LOOP_RATES = openLoopRates(options['open-loop']);
const ADMIN_REQUESTS = 7;
const PAGE_SIZE = 100;

const pollLoad = (paths: string[]) => pathsLoad(paths, CONNECTIONS, DURATION_S);
const POLL_ORDER = pollOrderOf(options.order);
const configPaths = (configPath: string) => requestPaths(configPath, OKM_COUNT, { order: POLL_ORDER });

const MiB = 1024 * 1024;

/** Median and slowest of ADMIN_REQUESTS admin OKM list pages (the first, one at a random cursor) and fleet summaries, one at a time after one unmeasured request. */
async function adminLatencies(name: string, env: Record<string, string>, port: number): Promise<void> {
  const { token } = (await keyfleetCli(env, 'token', 'issue', '--scope', 'admin')) as { token: string };
  const targets: [string, () => string][] = [
    ['OKM list, first page', () => `/api/v1/okms?limit=${PAGE_SIZE}`],
    ['OKM list, page at a random cursor', () => `/api/v1/okms?limit=${PAGE_SIZE}&cursor=${encodeCursor([serialOf(Math.floor(Math.random() * OKM_COUNT))], OKM_PAGES.name)}`],
    ['fleet summary', () => '/api/v1/fleet/summary'],
  ];
  const rows: Record<string, string | number>[] = [];
  for (const [label, path] of targets) {
    const times: number[] = [];
    for (let run = 0; run <= ADMIN_REQUESTS; run++) {
      const started = performance.now();
      const response = await fetch(`http://127.0.0.1:${port}${path()}`, { headers: { authorization: `Bearer ${token}` } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${path()}: ${response.status}`);
      if (run > 0) times.push(performance.now() - started);
    }
    rows.push({ target: `keyfleet ${name} admin: ${label}`, 'median ms': Math.round(median(times)), 'max ms': Math.round(Math.max(...times)), requests: times.length });
  }
  console.table(rows);
}

/** The polls at each of OPEN_LOOP_RATES, sent on a schedule; each result printed as it comes. */
async function openLoopPolls(target: string, port: number, server: ChildProcess, postgres: boolean): Promise<OpenLoopFigures[]> {
  const results: OpenLoopFigures[] = [];
  for (const rate of OPEN_LOOP_RATES) {
    const figures = await measureOpenLoop(target, port, configPaths('/api/v1/config'), { rate, seconds: DURATION_S, connections: CONNECTIONS, server, postgres });
    console.log(openLoopLine(figures));
    results.push(figures);
  }
  return results;
}

/** Spawn to /readyz 200 of `serve` on the database as it stands. */
async function startTime(env: Record<string, string>): Promise<number> {
  const { child, startMs } = await startKeyfleetTimed(env, { built: true });
  await stop(child);
  return startMs;
}

/** The window measured right after an enrolment wave: the "first 8 seconds". */
const AFTER_WAVE_S = 8;

/**
 * A new site comes online: OKM_COUNT serial numbers never seen poll once each (each first poll
 * enrols its OKM), as fast as 100 connections send them; then, at once and with no warm-up,
 * AFTER_WAVE_S of the steady fleet's polls, whose CPU per poll is compared with the steady
 * figure measured before (the database has just taken OKM_COUNT new rows and no analysis).
 */
async function afterEnrolmentWave(name: string, port: number, server: ChildProcess): Promise<Figures[]> {
  const firstPolls = requestPaths('/api/v1/config', OKM_COUNT, { firstIndex: OKM_COUNT, fleetSize: 2 * OKM_COUNT }).slice(0, OKM_COUNT);
  const newSerials = Array.from({ length: OKM_COUNT }, (_, index) => firstPolls[index % firstPolls.length]!.replace(/OKM-\d{7}/, serialOf(OKM_COUNT + index)));
  const wave = await measure(`keyfleet ${name}: enrolment wave of ${OKM_COUNT} first polls`, port, { ...pollLoad(newSerials), amount: OKM_COUNT }, { warmUpSeconds: 0, server, postgres: name === 'postgres' });
  const after = await measure(`keyfleet ${name}: first ${AFTER_WAVE_S} s after the wave`, port, { ...pollLoad(configPaths('/api/v1/config')), seconds: AFTER_WAVE_S }, { warmUpSeconds: 0, server, postgres: name === 'postgres' });
  return [wave, after];
}

/** Every open-loop result of the run, printed together at its end. */
const openLoop: OpenLoopFigures[] = [];

async function benchKeyfleet(database: BenchDatabase): Promise<Figures[]> {
  const { name, env } = database;
  // The start on the migrated empty database: what the fleet's size adds to it is the defect to look for.
  await withDb(env, async () => {});
  console.log(`${name}: spawn to /readyz 200 with no OKMs: ${Math.round(await startTime(env))} ms`);
  const seeding = Date.now();
  await seedFleet(env, OKM_COUNT);
  console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s; database ${((await databaseBytes(database)) / MiB).toFixed(0)} MiB`);
  const counts = name === 'sqlite' ? [1] : WORKER_COUNTS;
  if (counts !== WORKER_COUNTS && WORKER_COUNTS.some((count) => count > 1)) console.log(`${name}: one process only (serve refuses --workers on SQLite)`);
  const figures: Figures[] = [];
  for (const count of counts) {
    const label = count === 1 ? `keyfleet ${name}` : `keyfleet ${name}, ${count} workers`;
    const { port, child, startMs } = await startKeyfleetTimed(env, {
      built: true,
      cpuProfileDir: options['cpu-prof'] && path.join(options['cpu-prof'], `${name}-${count}`),
      command: () => (count === 1 ? ['serve'] : ['serve', '--workers', String(count)]),
    });
    try {
      // With workers, /readyz answers once the first one listens; the others started with it and are in by the end of the warm-up.
      console.log(`${label}: spawn to /readyz 200 in ${Math.round(startMs)} ms`);
      if (count === counts[0]) console.log(`${name}: answers seen on a sample of 400 requests:`, await observedMix(port, configPaths('/api/v1/config')));
      // CPU per poll: the server's (primary and workers) and the database's, the costs docs/scaling.md works from.
      figures.push(await measure(label, port, pollLoad(configPaths('/api/v1/config')), { server: child, postgres: name === 'postgres' }));
      console.log(`${label}: RSS after the polls ${(treeRssBytes(child.pid!) / MiB).toFixed(0)} MiB${count > 1 ? ' (primary and workers)' : ''}`);
      if (count === 1) {
        openLoop.push(...(await openLoopPolls(label, port, child, name === 'postgres')));
        // The bootstrap route does no database work: the framework's share of the cost.
        figures.push(await measure(`keyfleet ${name} bootstrap (no database)`, port, pollLoad(configPaths('/embeddedv1/kas/config'))));
        await adminLatencies(name, env, port);
        if (options['enrolment-wave']) figures.push(...(await afterEnrolmentWave(name, port, child)));
      }
    } finally {
      await stop(child);
    }
  }
  return figures;
}

async function main(): Promise<void> {
  const started = Date.now();
  const figures: Figures[] = [];
  buildServer();

  const bare = await startBare();
  try {
    // The same requests as keyfleet gets, so that the load generator's own cost is the same.
    figures.push(await measure('bare node:http', bare.port, pollLoad(configPaths('/api/v1/config')), { server: bare.child }));
    openLoop.push(...(await openLoopPolls('bare node:http', bare.port, bare.child, false)));
  } finally {
    await stop(bare.child);
  }

  await forEachBenchDatabase(options, async (database) => {
    figures.push(...(await benchKeyfleet(database)));
  });

  console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs polled in ${POLL_ORDER} order, ${os.cpus().length} CPUs`);
  console.log('mix:', MIX.map((entry) => `${Math.round(entry.share * 100)}% ${entry.name}`).join('; '));
  printFigures(figures, () => figures[0]);
  if (openLoop.length > 0) {
    console.log(`\nopen loop: requests due evenly at each rate over up to ${CONNECTIONS} connections, latency from the due time, ${DURATION_S} s after 2 s`);
    for (const figures of openLoop) console.log(openLoopLine(figures));
  }
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
