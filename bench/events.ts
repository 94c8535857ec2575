/**
 * Status-event benchmark (issue 3), on SQLite and PostgreSQL (when reachable):
 *
 * 1. Delivery rate: `keyfleet dispatch` (default settings) delivers --events queued status
 *    events, one per OKM, to a local receiver that answers 204 at once; events per second
 *    from the commit of the queue to the last one received.
 * 2. Poll throughput with status events: a fleet of 2 × --okms OKMs, half of them with two
 *    subscriber URLs (one that answers 204, one that never answers: the 15 s timeout ends
 *    each attempt), in the steady state of a fleet that has run for a while (see
 *    subscribeFleet), half with none. `keyfleet serve` (its own dispatcher running) under the
 *    config-poll load of bench/poll.ts, in --rounds pairs of runs: polls of the OKMs without
 *    subscribers, then of those with them. The figure is the median of the pairs' ratios
 *    (each pair sees the same machine). The same rounds on a server without its dispatcher
 *    show what queueing alone costs the poll.
 *
 *   npx tsx bench/events.ts [--sqlite] [--postgres] [--events 20000] [--okms 100000]
 *                           [--rounds 3] [--duration 10] [--connections 100] [--cpu-prof DIR]
 *                           [--delivery-only] [--delivery-runs 1]
 *
 * --cpu-prof profiles the server of the run with subscribers and its dispatcher, and the
 * `keyfleet dispatch` of the delivery runs. --delivery-only skips the polls (part 2);
 * --delivery-runs repeats part 1 on fresh databases and reports the median.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Db } from '../src/db/database.ts';
import { requestPaths, seedFleet, serialOf } from './fleet.ts';
import {
  BENCH_OPTIONS,
  WARM_UP_S,
  forEachBenchDatabase,
  freePort,
  measure,
  median,
  cpuSecondsOf,
  pathsLoad,
  postgresCpuSeconds,
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
    rounds: { type: 'string', default: '3' },
    'cpu-prof': { type: 'string' },
    'delivery-only': { type: 'boolean', default: false },
    'delivery-runs': { type: 'string', default: '1' },
  },
});
const EVENT_COUNT = Number(options.events);
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const ROUNDS = Number(options.rounds);
const CONNECTIONS = Number(options.connections);
const DELIVERY_RUNS = Number(options['delivery-runs']);

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

interface DeliveryRate {
  perSecond: number;
  received: number;
  /** CPU time of the dispatch process per event, from the queue's commit to the last event received. */
  dispatcherCpuMicros: number;
  /** The same of every PostgreSQL process on the host (others' work included), PostgreSQL only. */
  postgresCpuMicros: number | undefined;
}

async function deliveryRate({ name: kind, env }: BenchDatabase): Promise<DeliveryRate> {
  await seedFleet(env, EVENT_COUNT);
  const receivers = await startReceivers();
  try {
    const { child: dispatcher } = await startKeyfleet(
      { ...env, ...WEBHOOK_ENV },
      {
        command: (metricsPort) => ['dispatch', '--metrics-port', String(metricsPort)],
        readyPath: '/metrics',
        cpuProfileDir: options['cpu-prof'] && path.join(options['cpu-prof'], `${kind}-dispatch`),
      },
    );
    try {
      const cpuBefore = cpuSecondsOf(dispatcher.pid!);
      const postgresBefore = kind === 'postgres' ? postgresCpuSeconds() : undefined;
      // As EVENT_COUNT polls of OKMs subscribed to the receiver would leave them: marked, for the dispatcher to fan out and deliver.
      const started = await withDb(env, async (db) => {
        const now = Date.now();
        await db.updateTable('okms').set({ status_urls: JSON.stringify([receivers.url]), firmware_version: '2.10.0' }).execute();
        await db.updateTable('okm_polls').set({ last_sync_time: now, last_ip: '192.0.2.1', status_queued_at: now }).execute();
        return Date.now();
      });
      let received = 0;
      while ((received = await receivers.received()) < EVENT_COUNT) await new Promise((resolve) => setTimeout(resolve, 20));
      const seconds = (Date.now() - started) / 1000;
      const dispatcherCpuMicros = ((cpuSecondsOf(dispatcher.pid!) - cpuBefore) * 1e6) / EVENT_COUNT;
      const postgresCpuMicros = postgresBefore === undefined ? undefined : ((postgresCpuSeconds() - postgresBefore) * 1e6) / EVENT_COUNT;
      await new Promise((resolve) => setTimeout(resolve, 500));
      received = await receivers.received();
      console.log(`${kind}: ${EVENT_COUNT} events delivered in ${seconds.toFixed(2)} s (receiver counted ${received})`);
      return { perSecond: EVENT_COUNT / seconds, received, dispatcherCpuMicros, postgresCpuMicros };
    } finally {
      await stop(dispatcher);
    }
  } finally {
    await receivers.stop();
  }
}

const ROWS_PER_INSERT = 500;

/**
 * Subscribes the first OKM_COUNT OKMs to both receivers (the rest have none), in the
 * state a running fleet is in: the last status delivered to the answering receiver, and one
 * pending for the hanging one, its next retry minutes away (the schedule's second step).
 */
async function subscribeFleet(db: Db, receivers: Receivers): Promise<void> {
  const now = Date.now();
  await db
    .updateTable('okms')
    .set({ status_urls: JSON.stringify([receivers.url, receivers.hangingUrl]) })
    .where('serial_number', '<', serialOf(OKM_COUNT))
    .execute();
  await db.updateTable('okm_polls').set({ last_sync_time: now, last_ip: '192.0.2.1' }).where('serial_number', '<', serialOf(OKM_COUNT)).execute();
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

/**
 * Back to the steady state of subscribeFleet, undoing what a round's polls queued (and the
 * dispatcher's backlog). The bulk updates may deadlock with the server's fan-out on
 * PostgreSQL (they lock rows in another order, which no keyfleet transaction does): tried again.
 */
async function resetQueue(db: Db, receivers: Receivers): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.transaction().execute(async (tx) => {
        const now = Date.now();
        const unclaimed = { claim_token: null, claimed_until: null };
        await tx.updateTable('okm_polls').set({ status_queued_at: null }).where('status_queued_at', 'is not', null).execute();
        await tx.updateTable('status_events').set({ ...unclaimed, state: 'delivered', attempts: 0, next_attempt_at: now, delivered_at: now }).where('url', '=', receivers.url).execute();
        await tx.updateTable('status_events').set({ ...unclaimed, state: 'pending', attempts: 2, next_attempt_at: now + 300_000 }).where('url', '=', receivers.hangingUrl).execute();
      });
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
    }
  }
}

interface Round {
  without: Figures;
  with: Figures;
  delivered: number;
}

const sum = (rounds: Round[], of: (figures: Figures) => number) => rounds.reduce((total, round) => total + of(round.without) + of(round.with), 0);
const ratioOf = (round: Round) => round.with.requestsPerSecond / round.without.requestsPerSecond;

/**
 * ROUNDS pairs of runs on one server: polls of OKMs without subscribers, then of OKMs with
 * them, then the queue is reset. Pairs taken a few seconds apart see the same machine.
 */
async function alternatingRounds(database: BenchDatabase, receivers: Receivers, label: string, extraEnv: Record<string, string> = {}, cpuProfileDir?: string): Promise<Round[]> {
  const { port, child: server } = await startKeyfleet({ ...database.env, ...WEBHOOK_ENV, ...extraEnv }, { cpuProfileDir });
  const load = (firstIndex: number) => pathsLoad(requestPaths('/api/v1/config', OKM_COUNT, { firstIndex, fleetSize: 2 * OKM_COUNT }), CONNECTIONS, DURATION_S);
  const rounds: Round[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const without = await measure(`keyfleet ${database.name}, no subscribers`, port, load(OKM_COUNT), { server });
      const deliveredBefore = await receivers.received();
      const withEvents = await measure(`keyfleet ${database.name}, ${label}`, port, load(0), { server });
      rounds.push({ without, with: withEvents, delivered: (await receivers.received()) - deliveredBefore });
      console.log(`${database.name}, ${label}, round ${round}: ${Math.round(without.requestsPerSecond)} → ${Math.round(withEvents.requestsPerSecond)} polls/s, ratio ${ratioOf(rounds.at(-1)!).toFixed(2)}`);
      await withDb(database.env, (db) => resetQueue(db, receivers));
    }
  } finally {
    await stop(server);
  }
  return rounds;
}

interface PollRates {
  /** The server with its dispatcher, subscribers 2 per OKM (1 hanging). */
  inServer: Round[];
  /** With the subscribers, but no dispatcher in the server: the cost of queueing alone. */
  queueingOnly: Round[];
}

async function pollRates(database: BenchDatabase): Promise<PollRates> {
  await seedFleet(database.env, 2 * OKM_COUNT);
  const receivers = await startReceivers();
  try {
    await withDb(database.env, (db) => subscribeFleet(db, receivers));
    const profileDir = options['cpu-prof'] && path.join(options['cpu-prof'], database.name);
    const inServer = await alternatingRounds(database, receivers, '2 subscribers per OKM (1 hanging)', {}, profileDir);
    const queueingOnly = await alternatingRounds(database, receivers, '2 subscribers per OKM, no dispatcher', { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    return { inServer, queueingOnly };
  } finally {
    await receivers.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const rows: Record<string, string | number>[] = [];
  await forEachBenchDatabase(options, async (database) => {
    const runs: DeliveryRate[] = [];
    for (let run = 1; run <= DELIVERY_RUNS; run++) {
      // Every run after the first starts from a fresh database of the same kind.
      const rate = run === 1 ? await deliveryRate(database) : await withFreshDatabase(database.name, deliveryRate);
      runs.push(rate);
      const postgresCpu = rate.postgresCpuMicros === undefined ? '' : `, PostgreSQL (host) ${Math.round(rate.postgresCpuMicros)}`;
      console.log(
        `${database.name}: delivery run ${run}: ${Math.round(rate.perSecond)} events/s, CPU µs/event: dispatch ${Math.round(rate.dispatcherCpuMicros)}${postgresCpu} (load ${os.loadavg().map((load) => load.toFixed(1)).join(' ')})`,
      );
    }
    const rates = runs.map((run) => run.perSecond);
    if (options['delivery-only']) {
      rows.push({
        database: database.name,
        'events delivered/s': Math.round(median(rates)),
        runs: rates.map(Math.round).join(' '),
        'dispatch CPU µs/event': Math.round(median(runs.map((run) => run.dispatcherCpuMicros))),
      });
      return;
    }
    // The poll runs start from a fresh database of the same kind.
    const polls = await withFreshDatabase(database.name, pollRates);
    const { inServer, queueingOnly } = polls;
    const ratios = inServer.map(ratioOf);
    const cpu = (figures: Figures[]) => Math.round(median(figures.map((entry) => entry.cpuMicrosPerRequest ?? Number.NaN)));
    rows.push({
      database: database.name,
      'events delivered/s': Math.round(median(rates)),
      'polls/s, no subscribers': Math.round(median(inServer.map((round) => round.without.requestsPerSecond))),
      'polls/s, 2 subscribers (1 hanging)': Math.round(median(inServer.map((round) => round.with.requestsPerSecond))),
      'ratio (median of rounds)': `${median(ratios).toFixed(2)} (${ratios.map((ratio) => ratio.toFixed(2)).join(' ')})`,
      'ratio, queueing only': median(queueingOnly.map(ratioOf)).toFixed(2),
      'server CPU µs/poll without / with': `${cpu(inServer.map((round) => round.without))} / ${cpu(inServer.map((round) => round.with))}`,
      'p99 ms without / with': `${median(inServer.map((round) => round.without.p99))} / ${median(inServer.map((round) => round.with.p99))}`,
      'delivered per round': Math.round(median(inServer.map((round) => round.delivered))),
      'non-2xx / errors': `${sum(inServer, (figures) => figures.non2xx)} / ${sum(inServer, (figures) => figures.errors)}`,
    });
  });
  console.log(`\n${EVENT_COUNT} events; polls: ${ROUNDS} rounds, ${CONNECTIONS} connections, ${DURATION_S} s after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs with subscribers and as many without; ${os.cpus().length} CPUs`);
  console.table(rows);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
