/**
 * What the round trips of a PostgreSQL poll batch cost, beyond the one statement the floor's
 * batch makes (bench:poll-floor): keyfleet's steady batch is BEGIN, the batch statement, a read
 * of the fleet's latest releases and COMMIT (ADR 0107; ADR 0105 had folded the read into the
 * statement for a while). Two measurements:
 * - keyfleet serving the bench fleet's steady polls (100 connections): polls per transaction,
 *   from pg_stat_database's commits (other transactions of the server count too);
 * - in this process, in rotating rounds: an empty transaction (BEGIN, COMMIT), a transaction
 *   with the fleet read, and `SELECT 1` alone, each CPU per call of this process and of
 *   PostgreSQL's processes.
 * It prints what those round trips cost a poll at the served batch size: BEGIN and COMMIT's
 * line, and the line with the fleet read, which is keyfleet's steady batch.
 *
 *   npx tsx bench/pg-round-trips.ts [--okms 100000] [--calls 3000] [--rounds 3]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { fleetLatestReleasesForPoll } from '../src/device/poll-repository.ts';
import { requestPaths, seedFleet } from './fleet.ts';
import { buildServer, cpuSecondsOf, measure, median, pathsLoad, postgresCpuSeconds, startKeyfleet, stop, withFreshDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: { okms: { type: 'string', default: '100000' }, calls: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '3' } },
});
const OKM_COUNT = Number(options.okms);
const CALLS = Number(options.calls);
/** pg_stat_database lags by up to this. */
const STATISTICS_LAG_MS = 1200;

buildServer();
await withFreshDatabase('postgres', async (database) => {
  await seedFleet(database.env, OKM_COUNT);
  const settings = loadSettings({ ...database.env, LOG_LEVEL: 'silent' });
  const { db } = openDatabase(dialectFor(settings));
  try {
    const commits = async () =>
      Number((await sql<{ commits: string }>`select xact_commit as commits from pg_stat_database where datname = current_database()`.execute(db)).rows[0]!.commits);

    const keyfleet = await startKeyfleet(database.env, { built: true });
    let pollsPerTransaction: number;
    try {
      const load = pathsLoad(requestPaths(settings.configPath, OKM_COUNT), 100, 10);
      await measure('warm-up', keyfleet.port, { ...load, seconds: 3 }, { warmUpSeconds: 0 });
      await new Promise((resolve) => setTimeout(resolve, STATISTICS_LAG_MS));
      const before = await commits();
      const figures = await measure('keyfleet', keyfleet.port, load, { warmUpSeconds: 0, server: keyfleet.child, postgres: true });
      await new Promise((resolve) => setTimeout(resolve, STATISTICS_LAG_MS));
      const polls = figures.requestsPerSecond * load.seconds;
      pollsPerTransaction = polls / ((await commits()) - before);
      console.log(
        `keyfleet: ${Math.round(figures.requestsPerSecond)} polls/s, ${Math.round(figures.cpuMicrosPerRequest!)} + PostgreSQL ${Math.round(figures.postgresCpuMicrosPerRequest!)} µs a poll, ` +
          `${pollsPerTransaction.toFixed(1)} polls per transaction`,
      );
    } finally {
      await stop(keyfleet.child);
    }

    const calls: Record<string, () => Promise<unknown>> = {
      'BEGIN, COMMIT': () => db.transaction().execute(async () => {}),
      'BEGIN, fleet read, COMMIT': () => db.transaction().execute((tx) => fleetLatestReleasesForPoll(tx)),
      'SELECT 1': () => sql`select 1`.execute(db),
    };
    const names = Object.keys(calls);
    const costs = new Map<string, { client: number[]; postgres: number[] }>(names.map((name) => [name, { client: [], postgres: [] }]));
    for (let round = 0; round < Number(options.rounds); round++) {
      for (let turn = 0; turn < names.length; turn++) {
        const name = names[(turn + round) % names.length]!;
        const call = calls[name]!;
        for (let warm = 0; warm < CALLS / 10; warm++) await call();
        const client = cpuSecondsOf(process.pid);
        const postgres = postgresCpuSeconds();
        for (let index = 0; index < CALLS; index++) await call();
        costs.get(name)!.client.push(((cpuSecondsOf(process.pid) - client) * 1e6) / CALLS);
        costs.get(name)!.postgres.push(((postgresCpuSeconds() - postgres) * 1e6) / CALLS);
      }
    }
    const total = (name: string) => median(costs.get(name)!.client) + median(costs.get(name)!.postgres);
    for (const name of names) {
      console.log(`${name}: ${Math.round(median(costs.get(name)!.client))} + PostgreSQL ${Math.round(median(costs.get(name)!.postgres))} µs a call (medians of ${options.rounds} rounds)`);
    }
    // The batch statement itself is the floor's one round trip too; keyfleet adds BEGIN, the fleet read and COMMIT.
    for (const [what, name] of [
      ['BEGIN and COMMIT', 'BEGIN, COMMIT'],
      ['BEGIN, COMMIT and the fleet read (the steady batch, ADR 0107)', 'BEGIN, fleet read, COMMIT'],
    ] as const) {
      const added = total(name);
      console.log(`${what} beyond the floor's statement: ${Math.round(added)} µs a batch, ${(added / pollsPerTransaction).toFixed(1)} µs a poll at ${pollsPerTransaction.toFixed(1)} polls a batch`);
    }
  } finally {
    await db.destroy();
  }
});
