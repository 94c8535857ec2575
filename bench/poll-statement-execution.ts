/**
 * PostgreSQL's execution time of the poll's batch statement, as PostgreSQL reports it
 * (EXPLAIN ANALYZE, TIMING OFF: the plan's run, without the protocol, planning or the client),
 * against variants of it that also return a key of the fleet's latest releases (ADR 0108, not
 * kept), read the oldest pending messages otherwise (ADR 0119, not kept) or not at all, the floor's statement (bench:poll-floor) and the batch's read of those releases. On a shared host the timed benches cannot see a few tens of µs a batch;
 * an executor's time over hundreds of runs in rotation can. Each run is in a transaction rolled
 * back, so the rows stay as seeded.
 *
 *   npx tsx bench/poll-statement-execution.ts [--okms 20000] [--batch 15] [--runs 250]
 *
 * The batch statement is the one keyfleet's poll handler sends for a batch of `--batch` steady
 * polls of the bench fleet (captured from its query log); each variant changes one column of it (the grouped read
 * also adds its join). `--batch` 15: the polls per
 * transaction keyfleet served at saturation (bench/pg-round-trips.ts).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
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

/** The batch statement's read of each OKM's oldest pending message: a subquery for each row. */
const PENDING_SUBQUERY =
  /\(select "okm_messages"\."id" from "okm_messages" where "okm_messages"\."okm_serial" = "okms"\."serial_number" and "okm_messages"\."delivered_at" is null order by "okm_messages"\."id" limit 1\) as "pending_message_id"/;
/** The same for a batch's OKMs in one grouped read, of the serial numbers' array (ADR 0119, not kept). */
const groupedPendingRead = (serials: string) =>
  ` left join (select "okm_serial", min("id") as "id" from "okm_messages" where "delivered_at" is null and "okm_serial" in (select "serial" from unnest(${serials}) as "batch"("serial")) group by "okm_serial") as "pending" on "pending"."okm_serial" = "okms"."serial_number"`;

/**
 * The CPU time PostgreSQL's backend spends on each statement, read from /proc (the server runs
 * on this host) before and after it: EXPLAIN ANALYZE counts rows at each node of the plan, which
 * weighs on a plan that runs its nodes once for each row more than on one that runs them once.
 * Each statement is prepared under a name, as keyfleet's are (ADR 0106), in a transaction
 * rolled back, in rotation.
 */
async function backendCpu(url: string, statements: readonly (readonly [string, string, readonly unknown[]])[]): Promise<Map<string, number[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('set plan_cache_mode = force_generic_plan');
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const schedstat = `/proc/${rows[0]!.pid}/schedstat`;
    const onCpuNs = () => Number(fs.readFileSync(schedstat, 'utf8').split(' ')[0]);
    const cpu = new Map<string, number[]>(statements.map(([name]) => [name, []]));
    for (let run = 0; run < WARM_UP_RUNS + RUNS; run++) {
      const offset = run % statements.length;
      for (const [index, [name, text, parameters]] of [...statements.entries()].slice(offset).concat([...statements.entries()].slice(0, offset))) {
        await client.query('begin');
        const before = onCpuNs();
        await client.query({ name: `statement_${index}`, text, values: [...parameters] });
        const after = onCpuNs();
        await client.query('rollback');
        if (run >= WARM_UP_RUNS) cpu.get(name)!.push((after - before) / 1000);
      }
    }
    return cpu;
  } finally {
    await client.end();
  }
}

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
    const pendingSubquery = PENDING_SUBQUERY.exec(batch.sql);
    const rowSetEnd = /\) as "poll"\("serial"[^)]*\) on "poll"\."serial" = "okms"\."serial_number"/.exec(batch.sql);
    if (!pendingSubquery || !rowSetEnd) throw new Error('the batch statement does not read the pending messages as this script expects');
    const serialsParameter = `$${/unnest\(\$(\d+)::text\[\]/.exec(batch.sql)![1]}::text[]`;
    const withPendingAs = (expression: string, join = '') =>
      batch.sql
        // Replaced by functions: a replacement string would read the parameters' $1 as a group.
        .replace(PENDING_SUBQUERY, () => `${expression} as "pending_message_id"`)
        .replace(rowSetEnd[0], () => `${rowSetEnd[0]}${join}`);
    const finalFrom = ' from "known" inner join "written"';
    if (!batch.sql.includes(finalFrom)) throw new Error('the batch statement does not end as this script expects');
    const withKey = (expression: string) => batch.sql.replace(finalFrom, `, ${expression} as "fleet_releases_key"${finalFrom}`);
    // The row set's arrays in RECORDED_COLUMNS' order: serial, now, ip, reported values, install code.
    const serialsAt = batch.parameters.findIndex((parameter) => Array.isArray(parameter) && String(parameter[0]).startsWith('OKM-'));
    const serials = batch.parameters[serialsAt] as string[];
    const reported = batch.parameters[serialsAt + 3] as string[];
    const floorParameters = [serials, serials.map(() => Date.now()), serials.map(() => '127.0.0.1'), reported];
    const statements: [string, string, readonly unknown[]][] = [
      ['the batch statement', batch.sql, batch.parameters],
      ['the same with a key: the rows\' xmin', withKey(`(select string_agg(kind || ' ' || fleet_firmware.xmin || ' ' || firmware_releases.xmin, ',' order by kind) ${FLEET_JOIN})`), batch.parameters],
      ['the same with a key: a SHA-256 of the rows\' text', withKey(`(select encode(sha256(convert_to(string_agg(firmware_releases::text, ',' order by kind), 'UTF8')), 'base64') ${FLEET_JOIN})`), batch.parameters],
      ['the same with a null column', withKey('null'), batch.parameters],
      ['the floor\'s statement', FLOOR_POSTGRES_STATEMENT, floorParameters],
      ['the same, the oldest pending messages by one grouped read (ADR 0119, not kept)', withPendingAs('"pending"."id"', groupedPendingRead(serialsParameter)), batch.parameters],
      ['the same without the pending messages\' read', withPendingAs('null::integer'), batch.parameters],
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
    const cpu = await backendCpu(database.env.DATABASE_URL!, statements);
    console.log(`The backend's CPU a statement (its /proc/PID/schedstat, no instrumentation), prepared, generic plans, mean of ${RUNS} runs in rotation:`);
    for (const [name, values] of cpu) console.log(`  ${name}: ${Math.round(values.reduce((sum, value) => sum + value, 0) / values.length)} µs`);
  } finally {
    await raw.destroy();
    await db.destroy();
  }
});
