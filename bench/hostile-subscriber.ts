/**
 * Hostile status subscriber benchmark (issue 25, item 1): what one subscriber URL that answers
 * 200 and then streams a body without end costs the server and the other subscribers.
 *
 *   npm run bench:hostile-subscriber -- [--keyfleet-dir DIR] [--sqlite] [--postgres]
 *                                       [--okms 200] [--endless-okms N] [--duration 10]
 *                                       [--connections 100]
 *
 * --okms OKMs are created through the admin API, each configured as its bench/fleet.ts
 * template (so that the config polls of bench/fleet.ts requestPaths are in step), the first
 * half subscribed to a good subscriber (a child process answering 204 at once and counting
 * the events it receives). Two phases on one server, each a warm-up of WARM_UP_S and then
 * --duration s of config polls of every OKM (autocannon, --connections):
 *
 * 1. baseline: only the good subscriber;
 * 2. endless subscriber: the other half of the OKMs (or --endless-okms of them) subscribed to
 *    an EndlessBodyServer in 'endless' mode (test/helpers/endless-body-server.ts, in a child
 *    process of its own).
 *
 * Per phase: polls/s, latency, keyfleet's CPU (µs per poll and % of one core), how much of
 * the time its event loop was runnable but waited for a CPU (high: the host was busy, and the
 * figures are the host's), the host's PostgreSQL CPU (PostgreSQL runs), the good subscriber's
 * events/s, and what the endless server wrote (attempts it answered, those still open at the
 * end, MB, the largest answer so far) and the CPU that cost it on the same host.
 *
 * How to read them: each OKM has at most one status pending per URL, so the good subscriber's
 * events/s is its OKMs times the rate at which the dispatcher turns one around (fan-out,
 * claim, POST, outcome); compare runs with the same --okms. An attempt that reads until the
 * 15 s timeout outlasts a phase at the default --duration, so with such code the endless
 * server may start no attempt within the measured run (all 16 started in the warm-up and
 * are still open at its end), and the largest answer is what one attempt had read so far.
 * What the endless server wrote is what the kernel took from it, socket buffers included (on
 * loopback up to about 4 MiB per answer, EndlessBodyServer.bytesWritten): code that reads
 * 64 KiB and drops the connection still shows about 4 MB an attempt.
 *
 * --keyfleet-dir runs the server of another checkout (default: this one), to measure other
 * code with this benchmark, e.g. the code before the 64 KiB bound on answers (11ddba9^):
 *
 *   git worktree add --detach ../wt-before-bounded 11ddba9^ && (cd ../wt-before-bounded && npm ci)
 *   npm run bench:hostile-subscriber -- --keyfleet-dir ../wt-before-bounded
 *
 * That checkout's dist/ is built first (`npm run build` there), and only its compiled server
 * and its command line (`keyfleet token issue`) touch the database: the server migrates its
 * own fresh database at start, and everything else goes through HTTP, so code whose schema
 * differs from this checkout's is measured the same way. Settings are the defaults (15 s
 * timeout, 16 deliveries at once per host) but for WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (the
 * subscribers listen on 127.0.0.1) and the rate limits, raised as in every bench.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { OkmSettings } from '../src/okm/model.ts';
import type { EndlessReport } from './endless-subscriber.ts';
import { FIRMWARE, TEMPLATES, observedMix, requestPaths, serialOf } from './fleet.ts';
import {
  BENCH_OPTIONS,
  REPO_ROOT,
  WARM_UP_S,
  buildServer,
  cpuSecondsOf,
  forEachBenchDatabase,
  freePort,
  keyfleetCliOf,
  measure,
  pathsLoad,
  postgresCpuSeconds,
  startKeyfleet,
  startScript,
  stop,
  waitUntilServing,
  type BenchDatabase,
  type Figures,
  type KeyfleetOptions,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    okms: { type: 'string', default: '200' },
    'endless-okms': { type: 'string' },
    'keyfleet-dir': { type: 'string', default: REPO_ROOT },
  },
});
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
if (!Number.isInteger(OKM_COUNT) || OKM_COUNT < 2) throw new Error(`--okms: expected at least 2 (half of them per subscriber), got "${options.okms}"`);
/** OKMs serialOf(0 … GOOD_OKMS - 1) subscribe to the good subscriber; the rest, in the second phase, to the endless one. */
const GOOD_OKMS = Math.ceil(OKM_COUNT / 2);
/**
 * Of the rest, how many subscribe to the endless subscriber (default all). keyfleet sends at
 * most WEBHOOK_CONCURRENCY_PER_HOST (16) deliveries to one host at once, so from 16 on more
 * of them add no concurrent attempts; fewer (1: one endless answer at a time) change the load.
 */
const ENDLESS_OKMS = Number(options['endless-okms'] ?? OKM_COUNT - GOOD_OKMS);
if (!Number.isInteger(ENDLESS_OKMS) || ENDLESS_OKMS < 1 || ENDLESS_OKMS > OKM_COUNT - GOOD_OKMS) {
  throw new Error(`--endless-okms: expected 1 to ${OKM_COUNT - GOOD_OKMS} (the OKMs not subscribed to the good subscriber), got "${options['endless-okms']}"`);
}

const CHECKOUT: Pick<KeyfleetOptions, 'dir' | 'built'> = { dir: path.resolve(options['keyfleet-dir']), built: true };
const SERVER_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
/** Admin API calls in flight at once while the fleet is set up. */
const SETUP_CONCURRENCY = 16;
const MB = 1e6;

// ---- subscribers ----

/** The good subscriber: answers every POST 204 once its body is in, and GET with how many it has received. */
const GOOD_SUBSCRIBER = `
let count = 0;
require('node:http').createServer((request, response) => {
  if (request.method === 'GET') return response.end(String(count));
  request.resume();
  request.on('end', () => { count++; response.writeHead(204).end(); });
}).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

interface GoodSubscriber {
  url: string;
  child: ChildProcess;
  received(): Promise<number>;
}

async function startGoodSubscriber(): Promise<GoodSubscriber> {
  const port = await freePort();
  const child = startScript(GOOD_SUBSCRIBER, { PORT: String(port) });
  const url = `http://127.0.0.1:${port}/status`;
  await waitUntilServing(url, child);
  return { url, child, received: async () => Number(await (await fetch(url)).text()) };
}

interface EndlessSubscriber {
  url: string;
  child: ChildProcess;
  report(): Promise<EndlessReport>;
}

async function startEndlessSubscriber(): Promise<EndlessSubscriber> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'endless-subscriber.ts')], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const nextMessage = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the endless subscriber exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (message) => {
        child.off('exit', onExit);
        resolve(message as T);
      });
    });
  const { port } = await nextMessage<{ port: number }>();
  return {
    url: `http://127.0.0.1:${port}/status`,
    child,
    report: () => {
      const answer = nextMessage<EndlessReport>();
      child.send('report');
      return answer;
    },
  };
}

// ---- the fleet, through the admin API ----

type Api = (method: 'POST' | 'PUT' | 'PATCH' | 'GET', path: string, body?: unknown) => Promise<unknown>;

function adminApi(port: number, token: string): Api {
  return async (method, path, body) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  };
}

/** Runs `task` for 0 … count - 1, at most `concurrency` at once. */
async function forEachIndex(count: number, concurrency: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** An OKM's PUT body: its template's settings, and these status subscribers. */
function okmBody(template: OkmSettings, statusUrls: string[]) {
  return {
    cache_mode: template.cacheMode,
    key_checkout_window: template.keyCheckoutWindow,
    auditing_enabled: template.auditingEnabled,
    asset_list: template.assetList,
    users_assets: template.usersAssets,
    polling_interval: template.pollingInterval,
    subscribe_urls: { status: statusUrls },
  };
}

/** The fleet firmware of bench/fleet.ts (the versions its polls report), then OKM_COUNT OKMs, the first GOOD_OKMS subscribed to the good subscriber. */
async function createFleet(api: Api, goodUrl: string): Promise<void> {
  for (const [kind, version] of Object.entries(FIRMWARE)) {
    await api('POST', '/api/v1/firmware', { kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: 'ab'.repeat(32) });
    await api('PUT', `/api/v1/firmware/${kind}/latest`, { version });
  }
  await forEachIndex(OKM_COUNT, SETUP_CONCURRENCY, async (index) => {
    await api('PUT', `/api/v1/okms/${serialOf(index)}`, okmBody(TEMPLATES[index % TEMPLATES.length]!, index < GOOD_OKMS ? [goodUrl] : []));
  });
}

async function subscribeEndless(api: Api, endlessUrl: string): Promise<void> {
  await forEachIndex(ENDLESS_OKMS, SETUP_CONCURRENCY, async (offset) => {
    await api('PATCH', `/api/v1/okms/${serialOf(GOOD_OKMS + offset)}`, { subscribe_urls: { status: [endlessUrl] } });
  });
}

/** Each OKM's first poll (an OKM the admin API created has not polled yet), so that the phases measure a fleet in its steady state. */
async function firstPolls(port: number, paths: string[]): Promise<void> {
  const statuses: Record<number, number> = {};
  await forEachIndex(paths.length, SETUP_CONCURRENCY, async (index) => {
    const response = await fetch(`http://127.0.0.1:${port}${paths[index]}`);
    await response.arrayBuffer();
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
  });
  if (Object.keys(statuses).some((status) => Number(status) >= 300)) throw new Error(`first polls answered ${JSON.stringify(statuses)}`);
}

// ---- phases ----

/**
 * Seconds a thread has so far waited for a CPU while runnable (the second field of
 * /proc/PID/schedstat, in ns; Linux): on a host others share, how much of the run the server
 * could not run although it had work, which makes its figures the host's, not its own.
 */
function runQueueWaitSeconds(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
}

interface Snapshot {
  at: number;
  keyfleetCpuS: number;
  /** Of keyfleet's main thread (its event loop). */
  keyfleetWaitS: number;
  postgresCpuS: number | undefined;
  goodReceived: number;
  endless: EndlessReport;
  endlessCpuS: number;
}

interface Subscribers {
  good: GoodSubscriber;
  endless: EndlessSubscriber;
}

async function snapshot(server: ChildProcess, { good, endless }: Subscribers, postgres: boolean): Promise<Snapshot> {
  const [goodReceived, endlessReport] = await Promise.all([good.received(), endless.report()]);
  return {
    at: performance.now(),
    keyfleetCpuS: cpuSecondsOf(server.pid!),
    keyfleetWaitS: runQueueWaitSeconds(server.pid!),
    postgresCpuS: postgres ? postgresCpuSeconds() : undefined,
    goodReceived,
    endless: endlessReport,
    endlessCpuS: cpuSecondsOf(endless.child.pid!),
  };
}

interface PhaseFigures {
  figures: Figures;
  keyfleetCpuShare: number;
  keyfleetWaitShare: number;
  postgresCpuShare: number | undefined;
  goodEventsPerSecond: number;
  endlessAnswers: number;
  endlessOpenAtEnd: number;
  endlessBytes: number;
  largestAnswerBytes: number;
  endlessCpuShare: number;
}

/** A warm-up of WARM_UP_S, then DURATION_S of polls of every OKM, with the subscribers' and processes' counters read around the measured run only. */
async function phase(target: string, port: number, server: ChildProcess, subscribers: Subscribers, postgres: boolean): Promise<PhaseFigures> {
  const load = pathsLoad(requestPaths('/api/v1/config', OKM_COUNT), CONNECTIONS, DURATION_S);
  await measure(target, port, { ...load, seconds: WARM_UP_S }, { warmUpSeconds: 0 });
  const before = await snapshot(server, subscribers, postgres);
  const figures = await measure(target, port, load, { warmUpSeconds: 0, server, postgres });
  const after = await snapshot(server, subscribers, postgres);
  const seconds = (after.at - before.at) / 1000;
  const result: PhaseFigures = {
    figures,
    keyfleetCpuShare: (after.keyfleetCpuS - before.keyfleetCpuS) / seconds,
    keyfleetWaitShare: (after.keyfleetWaitS - before.keyfleetWaitS) / seconds,
    postgresCpuShare: postgres ? (after.postgresCpuS! - before.postgresCpuS!) / seconds : undefined,
    goodEventsPerSecond: (after.goodReceived - before.goodReceived) / seconds,
    endlessAnswers: after.endless.answers - before.endless.answers,
    endlessOpenAtEnd: after.endless.open,
    endlessBytes: after.endless.bytesWritten - before.endless.bytesWritten,
    largestAnswerBytes: after.endless.largestAnswerBytes,
    endlessCpuShare: (after.endlessCpuS - before.endlessCpuS) / seconds,
  };
  console.log(
    `${target}: ${Math.round(figures.requestsPerSecond)} polls/s, p99 ${figures.p99} ms, keyfleet CPU ${percent(result.keyfleetCpuShare)} of a core ` +
      `(its event loop waited for a CPU ${percent(result.keyfleetWaitShare)} of the time), ` +
      `good subscriber ${Math.round(result.goodEventsPerSecond)} events/s, endless subscriber ${result.endlessAnswers} attempts started, ${after.endless.open} open at the end, ` +
      `${(result.endlessBytes / MB).toFixed(0)} MB written (load ${os.loadavg().map((value) => value.toFixed(1)).join(' ')})`,
  );
  return result;
}

const percent = (share: number) => `${Math.round(share * 100)} %`;

async function benchDatabase(database: BenchDatabase, rows: Record<string, string | number>[]): Promise<void> {
  const env = { ...database.env, ...SERVER_ENV };
  const postgres = database.name === 'postgres';
  const good = await startGoodSubscriber();
  const endless = await startEndlessSubscriber();
  try {
    const { port, child: server } = await startKeyfleet(env, CHECKOUT);
    try {
      const { token } = (await keyfleetCliOf(CHECKOUT, env, 'token', 'issue', '--scope', 'admin')) as { token: string };
      const api = adminApi(port, token);
      await createFleet(api, good.url);
      await firstPolls(port, requestPaths('/api/v1/config', OKM_COUNT));
      console.log(`${database.name}: answers seen on a sample of the polls:`, await observedMix(port, requestPaths('/api/v1/config', OKM_COUNT)));

      const phases: [string, PhaseFigures][] = [];
      phases.push(['baseline', await phase(`${database.name}, baseline`, port, server, { good, endless }, postgres)]);
      await subscribeEndless(api, endless.url);
      phases.push(['endless subscriber', await phase(`${database.name}, endless subscriber`, port, server, { good, endless }, postgres)]);

      for (const [label, entry] of phases) {
        const answered = entry.figures.requestsPerSecond > 0;
        rows.push({
          target: `${database.name}: ${label}`,
          'polls/s': Math.round(entry.figures.requestsPerSecond),
          // autocannon reports 0 ms when no request was answered within the run.
          'p50 ms': answered ? entry.figures.p50 : 'none answered',
          'p99 ms': answered ? entry.figures.p99 : 'none answered',
          'non-2xx': entry.figures.non2xx,
          errors: entry.figures.errors,
          'keyfleet CPU µs/poll': answered ? Math.round(entry.figures.cpuMicrosPerRequest!) : '',
          'keyfleet CPU % core': Math.round(entry.keyfleetCpuShare * 100),
          'keyfleet loop waiting for a CPU %': Math.round(entry.keyfleetWaitShare * 100),
          ...(postgres && {
            'PostgreSQL CPU µs/poll': answered ? Math.round(entry.figures.postgresCpuMicrosPerRequest!) : '',
            'PostgreSQL CPU % core': Math.round(entry.postgresCpuShare! * 100),
          }),
          'good events/s': Math.round(entry.goodEventsPerSecond),
          'endless attempts started': entry.endlessAnswers,
          'endless attempts open at end': entry.endlessOpenAtEnd,
          'endless MB written': Math.round(entry.endlessBytes / MB),
          'largest answer MB': Math.round(entry.largestAnswerBytes / MB),
          'endless server CPU % core': Math.round(entry.endlessCpuShare * 100),
        });
      }
      const [baseline, hostile] = [phases[0]![1], phases[1]![1]];
      console.log(
        `${database.name}: with the endless subscriber, good events/s ${Math.round(baseline.goodEventsPerSecond)} → ${Math.round(hostile.goodEventsPerSecond)} ` +
          `(${(((hostile.goodEventsPerSecond - baseline.goodEventsPerSecond) / baseline.goodEventsPerSecond) * 100).toFixed(0)} %), ` +
          `poll p99 ${baseline.figures.p99} → ${hostile.figures.p99} ms, keyfleet CPU ${percent(baseline.keyfleetCpuShare)} → ${percent(hostile.keyfleetCpuShare)} of a core`,
      );
    } finally {
      await stop(server);
    }
  } finally {
    await stop(good.child);
    await stop(endless.child);
  }
}

/** The checkout's commit, to label the figures (before or after a change). */
function describeCheckout(dir: string): string {
  try {
    return execFileSync('git', ['-C', dir, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim();
  } catch {
    return 'not a git checkout';
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = CHECKOUT.dir!;
  buildServer(dir);
  if (!fs.existsSync(path.join(dir, 'dist/src/cli/main.js'))) throw new Error(`${dir}: no dist/src/cli/main.js after npm run build`);
  const rows: Record<string, string | number>[] = [];
  await forEachBenchDatabase(options, (database) => benchDatabase(database, rows));
  console.log(`\nkeyfleet of ${dir} (${describeCheckout(dir)})`);
  console.log(
    `${OKM_COUNT} OKMs: ${GOOD_OKMS} subscribed to a good subscriber, ${ENDLESS_OKMS} to an endless-body one in the second phase; ` +
      `${CONNECTIONS} connections, ${DURATION_S} s per phase after ${WARM_UP_S} s warm-up, ${os.cpus().length} CPUs`,
  );
  console.table(rows);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
