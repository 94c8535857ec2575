/**
 * List pages at depth (issue 14, contract §5.3): the OKM list pages by cursor, so a page deep in it
 * should cost what the first one does. ROWS OKMs (1 M by default; three in four of the
 * customer `lists`, the rest of another, one in 50 never polled, one in 97 marked overdue as
 * the fleet pass marks them, a quarter of those polled drifting; each polled one with its poll
 * row) and ROWS ACLs of `lists` are stored fast (INSERT … SELECT over a counter), then pages
 * are read through app.inject (the route and its queries, in process):
 *
 * - the OKM list, of the whole fleet (admin) and of the customer, unfiltered and for each
 *   `state`: its first page, a page in the middle and the last page, each reached by a cursor
 *   (the cursor of the row before it, as the previous page's next_cursor would be; built from
 *   the key, since walking to the middle of a million would take 10 000 requests), and pages
 *   after cursors at random places;
 * - the customer's ACL list of contract §0.6 and §8.3 (`page` / `results_per_page`, which keeps its
 *   numbered pages): its first page and its deepest.
 *
 * In rounds, for p50 and p99; SQLite, then PostgreSQL (or only the one asked for).
 *
 *   npx tsx bench/lists.ts [--sqlite] [--postgres] [--rows 1000000] [--rounds 3] [--random 20]
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql, type Expression, type SqlBool } from 'kysely';
import { issueToken } from '../src/auth/tokens.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/service.ts';
import { encodeCursor } from '../src/db/cursor-pages.ts';
import type { Db } from '../src/db/database.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { OKM_PAGES } from '../src/okm/admin-repository.ts';
import { FLEET_STATES, fleetStateCondition, NEVER_POLLED, type FleetState } from '../src/okm/fleet-states.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { createKeyRing } from '../src/key-ring.ts';
import { buildServer } from '../src/server.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, median } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    rows: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '3' },
    random: { type: 'string', default: '20' },
  },
});
const ROWS = Number(options.rows);
const ROUNDS = Number(options.rounds);
const RANDOM_PAGES = Number(options.random);
/** The API's default page size. */
const LIMIT = 50;
/** The default page size of the ACL list (contract §0.10). */
const ACLS_PER_PAGE = 30;
const ROWS_PER_STATEMENT = 50_000;
const CUSTOMER = 'lists';

/**
 * Stores `count` rows into `table` with INSERT … SELECT over a counter (a recursive CTE, on
 * both databases), ROWS_PER_STATEMENT a statement and a transaction: nothing but the
 * statement crosses from here to the database. `select` is the SELECT list over the counter
 * `i` (0 … count - 1), in the order of `columns`.
 */
async function store(db: Db, table: string, columns: string[], count: number, select: string): Promise<number> {
  const started = Date.now();
  for (let start = 0; start < count; start += ROWS_PER_STATEMENT) {
    const end = Math.min(start + ROWS_PER_STATEMENT, count);
    await db.transaction().execute(async (trx) => {
      await sql`with recursive counter(i) as (select ${sql.lit(start)} union all select i + 1 from counter where i < ${sql.lit(end - 1)})
        insert into ${sql.table(table)} (${sql.join(columns.map((column) => sql.ref(column)))})
        select ${sql.raw(select)} from counter`.execute(trx);
    });
  }
  return (Date.now() - started) / 1000;
}

/** Serial numbers and ids of the same length (1000000 + i), so that text order is number order. */
const numbered = (prefix: string) => `'${prefix}' || (1000000 + i)`;

async function seed(db: Db, customerId: number, otherId: number, now: number): Promise<Record<string, number>> {
  const seconds: Record<string, number> = {};
  const neverPolled = 'i % 50 = 0';
  // Never polled: overdue_at 0 (as a new OKM), no poll row. Overdue: polled an hour ago and
  // marked by the fleet pass since. The rest polled within the last second or so.
  seconds.okms = await store(
    db,
    'okms',
    ['serial_number', 'customer_id', 'auditing_enabled', 'status_urls', 'overdue_at', 'last_correction', 'firmware_version', 'created_at', 'updated_at'],
    ROWS,
    `${numbered('OKM-')}, case when i % 4 = 3 then ${otherId} else ${customerId} end, 0, '[]',
      case when ${neverPolled} then ${NEVER_POLLED} when i % 97 = 0 then ${now - 60_000} else null end,
      case when ${neverPolled} then null when i % 4 = 1 then 'kasDateTime' end,
      case when ${neverPolled} then null else '2.1.0' end, ${now}, ${now}`,
  );
  seconds.polls = await store(
    db,
    'okm_polls',
    ['serial_number', 'last_sync_time', 'last_ip', 'reported'],
    ROWS,
    // The never polled get a row too, deleted below: the counter has no WHERE of its own.
    `${numbered('OKM-')}, case when i % 97 = 0 then ${now - 3_600_000} - i % 1000 else ${now - 1_000} - i % 1000 end, '10.0.0.1', '{}'`,
  );
  await sql`delete from okm_polls where serial_number in (select serial_number from okms where overdue_at = ${NEVER_POLLED})`.execute(db);
  seconds.acls = await store(db, 'acls', ['id', 'customer_id', 'okm_serial', 'created_at', 'updated_at'], ROWS, `${numbered('acl-')}, ${customerId}, null, ${now}, ${now}`);
  await store(db, 'acl_contents', ['acl_id', 'users', 'locks', 'user_data', 'user_count', 'lock_count'], ROWS, `${numbered('acl-')}, '[]', '[]', null, 0, 0`);
  return seconds;
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

/** One list of OKMs to page through: whose, and which state. */
interface OkmTarget {
  name: string;
  token: 'admin' | 'customer';
  customerId?: number;
  state?: FleetState;
}

/** The conditions of the target, as the list applies them (fleetStateCondition is the list's own). */
function conditionsOf(target: OkmTarget): Expression<SqlBool>[] {
  return [
    ...(target.customerId === undefined ? [] : [sql<SqlBool>`okms.customer_id = ${target.customerId}`]),
    ...(target.state === undefined ? [] : [fleetStateCondition(target.state)]),
  ];
}

/**
 * The cursors of the target's pages: none (the first page), that of the row before the middle
 * one, that of the row before the last full page, and those of random rows; found by OFFSET in
 * the bench's setup, not timed.
 */
async function cursorsOf(db: Db, target: OkmTarget): Promise<{ matches: number; middle: string | undefined; last: string | undefined; random: string[] }> {
  const where = conditionsOf(target);
  const filtered = () => db.selectFrom('okms').where(({ and }) => and(where));
  const matches = Number((await filtered().select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);
  const serialAt = async (offset: number) => (await filtered().select('okms.serial_number').orderBy('okms.serial_number').limit(1).offset(offset).executeTakeFirstOrThrow()).serial_number;
  const cursorAt = async (offset: number) => (offset < 0 ? undefined : encodeCursor([await serialAt(offset)], OKM_PAGES.name));
  const random: string[] = [];
  for (let sample = 0; sample < RANDOM_PAGES && matches > 0; sample++) random.push((await cursorAt(Math.floor(Math.random() * matches)))!);
  return { matches, middle: await cursorAt(Math.floor(matches / 2) - 1), last: await cursorAt(matches - LIMIT - 1), random };
}

async function main(): Promise<void> {
  await forEachBenchDatabase(options, async ({ name, env }) => {
    // All pages come from two tokens: the rate limit is set too high to trigger, as the other
    // benches set it, so that its cost is measured. No fleet pass: its steps would run between the timed pages.
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent', RATE_LIMIT_API_PER_MINUTE: '1000000000', FLEET_PASS_INTERVAL_MS: '0' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const customer = await createCustomer(db, CUSTOMER);
    const other = await createCustomer(db, `${CUSTOMER}-other`);
    const now = Date.now();
    const seconds = await seed(db, customer.id, other.id, now);
    console.log(`${name}: stored ${ROWS} OKMs and ${ROWS} ACLs in ${Object.entries(seconds).map(([list, s]) => `${list} ${s.toFixed(1)} s`).join(', ')} (load ${os.loadavg()[0]!.toFixed(2)})`);
    // A serving database's WAL is kept short by its checkpointer; a bulk load leaves gigabytes in it, which every read would walk.
    if (name === 'sqlite') await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    // As autovacuum and autoanalyze would have by the time a list is this long: statistics,
    // and on PostgreSQL a visibility map, so that index-only scans skip the table.
    await sql`vacuum`.execute(db);
    await sql`analyze`.execute(db);

    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    const tokens = {
      admin: (await issueToken(db, keyRing, settings, { scopes: ['admin'], ttlSeconds: 3600 })).token,
      customer: (await issueToken(db, keyRing, settings, { customer: CUSTOMER, scopes: ['okm:read', 'acl:read'], ttlSeconds: 3600 })).token,
    };
    const get = async (url: string, token: 'admin' | 'customer') => {
      const started = process.hrtime.bigint();
      const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens[token]}` } });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 300)}`);
      return { ms, body: response.json() as { data: unknown[]; next_cursor?: string | null } };
    };
    const report = (list: string, entries: number, all: number[], byPosition: Record<string, number[]>) =>
      console.log(
        `${name}: ${list} (${entries} entries): p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms over ${all.length} pages; ` +
          `median ${Object.entries(byPosition).map(([position, times]) => `${position} ${median(times).toFixed(1)}`).join(', ')} ms (load ${os.loadavg()[0]!.toFixed(2)})`,
      );

    const targets: OkmTarget[] = [
      { name: 'OKMs, whole fleet (admin)', token: 'admin' },
      { name: 'OKMs, one customer', token: 'customer', customerId: customer.id },
      ...FLEET_STATES.flatMap((state): OkmTarget[] => [
        { name: `OKMs, whole fleet (admin), state=${state}`, token: 'admin', state },
        { name: `OKMs, one customer, state=${state}`, token: 'customer', customerId: customer.id, state },
      ]),
    ];
    try {
      // The same rounds on a route that reads nothing: what the host's load adds to any request.
      const baseline: number[] = [];
      for (let round = 0; round < ROUNDS * 3; round++) baseline.push((await get('/healthz', 'admin')).ms);
      report('baseline: GET /healthz', 0, baseline, { any: baseline });

      for (const target of targets) {
        const { matches, middle, last, random } = await cursorsOf(db, target);
        const query = target.state === undefined ? '' : `state=${target.state}&`;
        const url = (cursor: string | undefined) => `/api/v1/okms?${query}limit=${LIMIT}${cursor === undefined ? '' : `&cursor=${cursor}`}`;
        // The cursors are real: the last page is the last (no next_cursor), the middle one is not.
        if (matches > 2 * LIMIT) {
          assert.equal((await get(url(last), target.token)).body.next_cursor, null, `${target.name}: the last page`);
          assert.notEqual((await get(url(middle), target.token)).body.next_cursor, null, `${target.name}: a middle page`);
        }
        const byPosition: Record<'first' | 'middle' | 'last', number[]> = { first: [], middle: [], last: [] };
        const all: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          for (const [position, cursor] of [['first', undefined], ['middle', middle], ['last', last]] as const) {
            const { ms } = await get(url(cursor), target.token);
            byPosition[position].push(ms);
            all.push(ms);
          }
          for (const cursor of random) all.push((await get(url(cursor), target.token)).ms);
        }
        report(`${target.name}, ${LIMIT} a page by cursor`, matches, all, byPosition);
      }

      // The ACL list keeps its numbered pages (contract §8.3): the first and the deepest of the customer's.
      const deepest = Math.max(1, Math.ceil(ROWS / ACLS_PER_PAGE));
      const aclUrl = (page: number) => `/api/v1/acls?customer=${CUSTOMER}&page=${page}&results_per_page=${ACLS_PER_PAGE}`;
      const byPage: Record<'first' | 'deepest', number[]> = { first: [], deepest: [] };
      for (let round = 0; round < ROUNDS; round++) {
        byPage.first.push((await get(aclUrl(1), 'customer')).ms);
        const { ms, body } = await get(aclUrl(deepest), 'customer');
        assert.equal(body.data.length, ROWS - (deepest - 1) * ACLS_PER_PAGE, 'the deepest page holds the last ACLs');
        byPage.deepest.push(ms);
      }
      report(`ACLs of one customer (the list of contract §8.3: page ${deepest} of ${ACLS_PER_PAGE}, total_results counted)`, ROWS, [...byPage.first, ...byPage.deepest], byPage);
    } finally {
      await app.close();
      await db.destroy();
    }
  });
}

await main();
