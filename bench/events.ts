/**
 * Status-event benchmark (issue 3), on SQLite and PostgreSQL (when reachable):
 *
 * 1. Delivery rate: `keyfleet dispatch` (default settings) delivers --events queued status
 *    events, one per OKM, to a local receiver that answers 204 at once; events per second
 *    from the commit of the queue to the last one received.
 * 2. Poll throughput with status events: `keyfleet serve` (its own dispatcher running) under
 *    the config-poll load of bench/poll.ts, first with no subscriber URLs, then with two per
 *    OKM: one that answers 204, one that never answers (the 15 s timeout ends each attempt),
 *    starting from the steady state of a fleet that has run for a while (see subscribeFleet).
 *    The figure is the ratio of the two poll rates. A third run, with the subscribers but no
 *    dispatcher in the server, shows what queueing alone costs the poll.
 *
 *   npx tsx bench/events.ts [--sqlite] [--postgres] [--events 20000] [--okms 100000]
 *                           [--duration 10] [--connections 100] [--cpu-prof DIR]
 *
 * --cpu-prof profiles the server of the run with subscribers and its dispatcher.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Db } from '../src/db/database.ts';
import { queueStatusEvents } from '../src/webhooks/queue-repository.ts';
import { requestPaths, seedFleet, serialOf } from './fleet.ts';
import {
  BENCH_OPTIONS,
  WARM_UP_S,
  forEachBenchDatabase,
  freePort,
  measure,
  pathsLoad,
  startKeyfleet,
  startScript,
  stop,
  waitUntilServing,
  withDb,
  withFreshDatabase,
  type BenchDatabase,
  type Figures,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    events: { type: 'string', default: '20000' },
    okms: { type: 'string', default: '100000' },
    'cpu-prof': { type: 'string' },
  },
});
const EVENT_COUNT = Number(options.events);
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);

/** Two receivers in one child process: PORT answers 204 and counts (GET /count), HANGING_PORT never answers. */
const RECEIVERS = `
const http = require('node:http');
let count = 0;
http.createServer((request, response) => {
  if (request.method === 'GET') return response.end(String(count));
  request.resume();
  request.on('end', () => { count++; response.writeHead(204).end(); });
}).listen(Number(process.env.PORT), '127.0.0.1');
http.createServer((request) => request.resume()).listen(Number(process.env.HANGING_PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

interface Receivers {
  url: string;
  hangingUrl: string;
  received(): Promise<number>;
  stop(): Promise<void>;
}

async function startReceivers(): Promise<Receivers> {
  const [port, hangingPort] = [await freePort(), await freePort()];
  const child = startScript(RECEIVERS, { PORT: String(port), HANGING_PORT: String(hangingPort) });
  const url = `http://127.0.0.1:${port}/events`;
  await waitUntilServing(url, child);
  return {
    url,
    hangingUrl: `http://127.0.0.1:${hangingPort}/events`,
    received: async () => Number(await (await fetch(url)).text()),
    stop: () => stop(child),
  };
}

const WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };

async function deliveryRate({ name: kind, env }: BenchDatabase): Promise<{ perSecond: number; received: number }> {
  await seedFleet(env, EVENT_COUNT);
  const receivers = await startReceivers();
  try {
    const { child: dispatcher } = await startKeyfleet(
      { ...env, ...WEBHOOK_ENV },
      { command: (metricsPort) => ['dispatch', '--metrics-port', String(metricsPort)], readyPath: '/metrics' },
    );
    try {
      const started = await withDb(env, async (db) => {
        const now = Date.now();
        await db.updateTable('okms').set({ last_sync_time: now, last_ip: '192.0.2.1', firmware_version: '2.10.0' }).execute();
        await db.transaction().execute(async (tx) => {
          for (let index = 0; index < EVENT_COUNT; index++) await queueStatusEvents(tx, serialOf(index), [receivers.url], now);
        });
        return Date.now();
      });
      let received = 0;
      while ((received = await receivers.received()) < EVENT_COUNT) await new Promise((resolve) => setTimeout(resolve, 20));
      const seconds = (Date.now() - started) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 500));
      received = await receivers.received();
      console.log(`${kind}: ${EVENT_COUNT} events delivered in ${seconds.toFixed(2)} s (receiver counted ${received})`);
      return { perSecond: EVENT_COUNT / seconds, received };
    } finally {
      await stop(dispatcher);
    }
  } finally {
    await receivers.stop();
  }
}

const ROWS_PER_INSERT = 500;

/**
 * Subscribes every OKM to both receivers, in the state a running fleet is in: the last status
 * delivered to the answering receiver, and one pending for the hanging one, its next retry
 * minutes away (the schedule's second step).
 */
async function subscribeFleet(db: Db, receivers: Receivers): Promise<void> {
  const now = Date.now();
  await db.updateTable('okms').set({ status_urls: JSON.stringify([receivers.url, receivers.hangingUrl]), last_sync_time: now, last_ip: '192.0.2.1' }).execute();
  await db.transaction().execute(async (tx) => {
    for (let start = 0; start < OKM_COUNT; start += ROWS_PER_INSERT) {
      const serials = Array.from({ length: Math.min(ROWS_PER_INSERT, OKM_COUNT - start) }, (_, offset) => serialOf(start + offset));
      await tx
        .insertInto('status_events')
        .values(
          serials.flatMap((serial) => [
            { okm_serial: serial, url: receivers.url, host: new URL(receivers.url).host, state: 'delivered' as const, attempts: 0, next_attempt_at: now, delivered_at: now },
            { okm_serial: serial, url: receivers.hangingUrl, host: new URL(receivers.hangingUrl).host, state: 'pending' as const, attempts: 2, next_attempt_at: now + 300_000 },
          ]),
        )
        .execute();
    }
  });
}

interface PollRates {
  without: Figures;
  with: Figures;
  /** With the subscribers, but no dispatcher in the server: the cost of queueing alone. */
  queueingOnly: Figures;
  delivered: number;
}

async function pollRates({ name: kind, env }: BenchDatabase): Promise<PollRates> {
  await seedFleet(env, OKM_COUNT);
  const receivers = await startReceivers();
  try {
    const run = async (target: string, extraEnv: Record<string, string> = {}, cpuProfileDir?: string) => {
      const { port, child: server } = await startKeyfleet({ ...env, ...WEBHOOK_ENV, ...extraEnv }, { cpuProfileDir });
      try {
        return await measure(target, port, pathsLoad(requestPaths('/api/v1/config', OKM_COUNT), CONNECTIONS, DURATION_S));
      } finally {
        await stop(server);
      }
    };
    const without = await run(`keyfleet ${kind}, no subscribers`);
    await withDb(env, (db) => subscribeFleet(db, receivers));
    const queueingOnly = await run(`keyfleet ${kind}, 2 subscribers per OKM, no dispatcher`, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    const deliveredBefore = await receivers.received();
    const profileDir = options['cpu-prof'] && path.join(options['cpu-prof'], kind);
    const withEvents = await run(`keyfleet ${kind}, 2 subscribers per OKM (1 hanging)`, {}, profileDir);
    return { without, with: withEvents, queueingOnly, delivered: (await receivers.received()) - deliveredBefore };
  } finally {
    await receivers.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const rows: Record<string, string | number>[] = [];
  await forEachBenchDatabase(options, async (database) => {
    const rate = await deliveryRate(database);
    // The poll runs start from a fresh database of the same kind.
    const polls = await withFreshDatabase(database.name, pollRates);
    rows.push({
      database: database.name,
      'events delivered/s': Math.round(rate.perSecond),
      'polls/s, no subscribers': Math.round(polls.without.requestsPerSecond),
      'polls/s, 2 subscribers (1 hanging)': Math.round(polls.with.requestsPerSecond),
      ratio: (polls.with.requestsPerSecond / polls.without.requestsPerSecond).toFixed(2),
      'ratio, queueing only': (polls.queueingOnly.requestsPerSecond / polls.without.requestsPerSecond).toFixed(2),
      'p99 ms without / with': `${polls.without.p99} / ${polls.with.p99}`,
      'delivered during the poll run': polls.delivered,
      'non-2xx / errors': `${polls.without.non2xx + polls.with.non2xx} / ${polls.without.errors + polls.with.errors}`,
    });
  });
  console.log(`\n${EVENT_COUNT} events; polls: ${CONNECTIONS} connections, ${DURATION_S} s after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs; ${os.cpus().length} CPUs`);
  console.table(rows);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
