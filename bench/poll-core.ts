/**
 * The config poll without HTTP: keyfleet's poll handler (record, decide, answer) driven
 * directly on a seeded fleet, so that the database's share of a poll's CPU is seen apart from
 * the framework's and the socket's. Same fleet, mix and order as bench:poll.
 *
 *   npm run bench:poll-core -- [--sqlite] [--postgres] [--okms 100000] [--duration 10]
 *                              [--in-flight 100] [--cpu-prof DIR]
 *
 * Prints polls/s and CPU per poll of this process (all threads, from /proc), and for
 * PostgreSQL its backends' CPU too. `--in-flight` polls are kept outstanding, as that many
 * connections would; the write batcher groups those that arrive in one turn.
 */
import { parseArgs } from 'node:util';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { openDatabase, dialectFor } from '../src/db/database.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createPollHandler, type PollRequest } from '../src/device/poll-service.ts';
import { reportedQueryOf } from '../src/shared/reported-values.ts';
import { requestPaths, seedFleet } from './fleet.ts';
import { cpuSecondsOf, forEachBenchDatabase, postgresCpuSeconds } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    okms: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    'in-flight': { type: 'string', default: '100' },
    'cpu-prof': { type: 'string' },
  },
});
const OKM_COUNT = Number(options.okms);
const DURATION_MS = Number(options.duration) * 1000;
const IN_FLIGHT = Number(options['in-flight']);

/** The handler's input for one request path of the bench fleet: serial number and parsed query. */
function pollRequestOf(requestPath: string): Omit<PollRequest, 'now'> {
  const url = new URL(requestPath, 'http://bench');
  const query: Record<string, unknown> = {};
  for (const [name, value] of url.searchParams) {
    const before = query[name];
    query[name] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value];
  }
  return { serialNumber: decodeURIComponent(url.pathname.split('/').pop()!), ip: '127.0.0.1', query, reportedQuery: reportedQueryOf(requestPath) };
}

await forEachBenchDatabase(options, async (database) => {
  await seedFleet(database.env, OKM_COUNT);
  const settings = loadSettings({ ...database.env, LOG_LEVEL: 'silent' });
  const dialect = dialectFor(settings);
  const { db } = openDatabase(dialect);
  const handle = createPollHandler(db, settings, dialect, () => {});
  const requests = requestPaths(settings.configPath, OKM_COUNT).map(pollRequestOf);
  /** Bytes PostgreSQL has written to its WAL so far (the whole server's). */
  const walBytes = async () => Number((await sql<{ bytes: string }>`select pg_current_wal_lsn() - '0/0' as bytes`.execute(db)).rows[0]!.bytes);
  /** A transaction id: every row written after it has a younger xmin. */
  const currentXid = async () => (await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(db)).rows[0]!.xid;
  /** okms rows written since the transaction `xid` (a steady poll writes none). */
  const okmsWrittenSince = async (xid: string) => Number((await sql<{ written: string }>`select count(*) as written from okms where age(xmin) < age(xid(${xid}::xid8))`.execute(db)).rows[0]!.written);
  /** Transactions committed in this database so far (PostgreSQL's statistics, which lag by up to a second). */
  const commits = async () => Number((await sql<{ commits: string }>`select xact_commit as commits from pg_stat_database where datname = current_database()`.execute(db)).rows[0]!.commits);
  let next = 0;
  let polls = 0;
  const pollFor = async (until: number) => {
    while (performance.now() < until) {
      const request = requests[next++ % requests.length]!;
      await handle({ ...request, now: Date.now() });
      polls++;
    }
  };
  const round = async (ms: number) => {
    polls = 0;
    const until = performance.now() + ms;
    await Promise.all(Array.from({ length: IN_FLIGHT }, () => pollFor(until)));
    return polls;
  };
  await round(2000);
  let session: Session | undefined;
  if (options['cpu-prof']) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  console.log(`${database.name}: measuring ${DURATION_MS / 1000} s`);
  const cpuBefore = cpuSecondsOf(process.pid);
  const pgBefore = database.name === 'postgres' ? postgresCpuSeconds() : 0;
  const walBefore = database.name === 'postgres' ? await walBytes() : 0;
  const commitsBefore = database.name === 'postgres' ? await commits() : 0;
  const xidBefore = database.name === 'postgres' ? await currentXid() : '';
  const started = performance.now();
  const count = await round(DURATION_MS);
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSecondsOf(process.pid) - cpuBefore;
  const pgCpu = database.name === 'postgres' ? postgresCpuSeconds() - pgBefore : 0;
  const wal = database.name === 'postgres' ? (await walBytes()) - walBefore : 0;
  if (database.name === 'postgres') await new Promise((resolve) => setTimeout(resolve, 1100));
  const committed = database.name === 'postgres' ? (await commits()) - commitsBefore : 0;
  const okmsWritten = database.name === 'postgres' ? await okmsWrittenSince(xidBefore) : 0;
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(options['cpu-prof']!, { recursive: true });
    fs.writeFileSync(path.join(options['cpu-prof']!, `poll-core-${database.name}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
  const perPoll = (value: number) => Math.round((value / count) * 1e6);
  console.log(
    `${database.name}: ${Math.round(count / seconds)} polls/s, CPU per poll ${perPoll(cpu)} µs` + (database.name === 'postgres' ? ` + PostgreSQL ${perPoll(pgCpu)} µs, ${Math.round(wal / count)} WAL bytes, ${(count / committed).toFixed(1)} polls per transaction, ${((okmsWritten / count) * 1000).toFixed(1)} okms rows written per 1000 polls (each counted once)` : ''),
  );
  await db.destroy();
});
