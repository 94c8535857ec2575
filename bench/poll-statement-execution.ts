/**
 * PostgreSQL's execution time of the poll's batch statement, as PostgreSQL reports it
 * (EXPLAIN ANALYZE, TIMING OFF: the plan's run, without the protocol, planning or the client),
 * against variants of it that also return a key of the fleet's latest releases (ADR 0108, not
 * kept), the floor's statement (bench:poll-floor) and the batch's read of those releases. On a shared host the timed benches cannot see a few tens of µs a batch;
 * an executor's time over hundreds of runs in rotation can. Each run is in a transaction rolled
 * back, so the rows stay as seeded.
 *
 *   npx tsx bench/poll-statement-execution.ts [--okms 20000] [--batch 15] [--runs 250]
 *
 * The batch statement is the one keyfleet's poll handler sends for a batch of `--batch` steady
 * polls of the bench fleet (captured from its query log); the variants add a column to it. `--batch` 15: the polls per
 * transaction keyfleet served at saturation (bench/pg-round-trips.ts).
 */
import { parseArgs } from 'node:util';
import { CompiledQuery, Kysely } from 'kysely';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor } from '../src/db/database.ts';
import type { Database } from '../src/db/schema.ts';
import { createPollHandler, type PollRequest } from '../src/device/poll-service.ts';
import { reportedQueryOf } from '../src/shared/reported-values.ts';
import { requestPaths, seedFleet } from './fleet.ts';
import { FLOOR_POSTGRES_STATEMENT } from './floor-statements.ts';
import { median, withFreshDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: { okms: { type: 'string', default: '20000' }, batch: { type: 'string', default: '15' }, runs: { type: 'string', default: '250' } },
});
const OKM_COUNT = Number(options.okms);
const BATCH = Number(options.batch);
const RUNS = Number(options.runs);
/** Runs of each statement not counted: the first, while caches fill. */
const WARM_UP_RUNS = 50;

const asRequest = (path: string): PollRequest => {
  const url = new URL(path, 'http://bench');
  return { serialNumber: url.pathname.split('/').pop()!, ip: '127.0.0.1', query: Object.fromEntries(url.searchParams), reportedQuery: reportedQueryOf(path), now: Date.now() };
};

const FLEET_JOIN = `from fleet_firmware join firmware_releases using (kind, version)`;

await withFreshDatabase('postgres', async (database) => {
  await seedFleet(database.env, OKM_COUNT);
  const settings = loadSettings({ ...database.env, LOG_LEVEL: 'silent' });
  const strategy = dialectFor(settings);
  let log: CompiledQuery[] = [];
  const db = new Kysely<Database>({ dialect: strategy.createDialect(), log: (event) => void log.push(event.query) });
  const raw = new Kysely<Database>({ dialect: strategy.createDialect() });
  try {
    const handle = createPollHandler(db, settings, strategy, () => {});
    const paths = requestPaths('/api/v1/config', OKM_COUNT).slice(0, 40 * BATCH);
    // Twice over, so that the polls are steady (the first ends each OKM's never-polled state).
    for (let round = 0; round < 2; round++) {
      for (let index = 0; index < paths.length; index += BATCH) await Promise.all(paths.slice(index, index + BATCH).map((path) => handle(asRequest(path))));
    }
    log = [];
    await Promise.all(paths.slice(0, BATCH).map((path) => handle(asRequest(path))));
    const batch = log.find((query) => query.sql.startsWith('with "known"'));
    const fleetRead = log.find((query) => /^select .* from "fleet_firmware"/s.test(query.sql));
    if (!batch || !fleetRead) throw new Error(`no batch statement or fleet read among: ${log.map((query) => query.sql.slice(0, 40)).join('; ')}`);
    const finalFrom = ' from "known" inner join "written"';
    if (!batch.sql.includes(finalFrom)) throw new Error('the batch statement does not end as this script expects');
    const withKey = (expression: string) => batch.sql.replace(finalFrom, `, ${expression} as "fleet_releases_key"${finalFrom}`);
    const serials = batch.parameters.find((parameter) => Array.isArray(parameter) && String(parameter[0]).startsWith('OKM-')) as string[];
    const reported = batch.parameters.find((parameter) => Array.isArray(parameter) && String(parameter[0]).startsWith('{')) as string[];
    const floorParameters = [serials, serials.map(() => Date.now()), serials.map(() => '127.0.0.1'), reported];
    const statements: [string, string, readonly unknown[]][] = [
      ['the batch statement', batch.sql, batch.parameters],
      ['the same with a key: the rows\' xmin', withKey(`(select string_agg(kind || ' ' || fleet_firmware.xmin || ' ' || firmware_releases.xmin, ',' order by kind) ${FLEET_JOIN})`), batch.parameters],
      ['the same with a key: a SHA-256 of the rows\' text', withKey(`(select encode(sha256(convert_to(string_agg(firmware_releases::text, ',' order by kind), 'UTF8')), 'base64') ${FLEET_JOIN})`), batch.parameters],
      ['the same with a null column', withKey('null'), batch.parameters],
      ['the floor\'s statement', FLOOR_POSTGRES_STATEMENT, floorParameters],
      ['the fleet read, the batch\'s next statement', fleetRead.sql, fleetRead.parameters],
      ['select 1', 'select 1', []],
    ];
    await raw.executeQuery(CompiledQuery.raw('set plan_cache_mode = force_generic_plan'));
    const times = new Map<string, number[]>(statements.map(([name]) => [name, []]));
    for (let run = 0; run < WARM_UP_RUNS + RUNS; run++) {
      // Each statement in each place of the rotation in turn: the first write after a rolled-back
      // one pays for the versions that rollback left (measured: twice the Insert's time).
      const offset = run % statements.length;
      for (const [name, text, parameters] of [...statements.slice(offset), ...statements.slice(0, offset)]) {
        await raw.executeQuery(CompiledQuery.raw('begin'));
        const { rows } = await raw.executeQuery<Record<string, string>>(CompiledQuery.raw(`explain (analyze, timing off, summary on) ${text}`, [...parameters]));
        await raw.executeQuery(CompiledQuery.raw('rollback'));
        const line = rows.map((row) => Object.values(row)[0]!).find((text) => text.startsWith('Execution Time'))!;
        if (run >= WARM_UP_RUNS) times.get(name)!.push(Number(/([\d.]+) ms/.exec(line)![1]) * 1000);
      }
    }
    console.log(`PostgreSQL's execution time, median of ${RUNS} runs in rotation, a batch of ${BATCH} steady polls, ${OKM_COUNT} OKMs:`);
    for (const [name, values] of times) console.log(`  ${name}: ${Math.round(median(values))} µs`);
  } finally {
    await raw.destroy();
    await db.destroy();
  }
});
