/**
 * List routes at depth (issue 14): every list stores ROWS rows (1 M by default) of one scope
 * (one customer's OKMs, ACLs and DLocks, one OKM's audit records and delivery failures, one
 * webhook endpoint's deliveries, the pending OKMs), stored fast (INSERT … SELECT over a
 * counter, triggers on), then its pages are read through app.inject (the route and its
 * queries, in process): the first, the middle, the last and random ones, in rounds, for p50
 * and p99. Also the OKM list's filters and sorts at depth. Once stored, the lists' page buckets
 * are cut as a server's bucket keeper would, and the fleet summary's deltas folded as its
 * folder would, timed apart, before any page is read; the first
 * page read of each list is printed apart too. SQLite, then PostgreSQL (or only the one asked for).
 *
 *   npx tsx bench/lists.ts [--sqlite] [--postgres] [--rows 1000000] [--rounds 3] [--random 40]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { issueToken } from '../src/auth/tokens.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/repository.ts';
import type { Db } from '../src/db/database.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { keepPageBuckets } from '../src/db/page-buckets.ts';
import { PAGED_LISTS } from '../src/db/paged-lists.ts';
import { foldFleetSummaryDeltas } from '../src/okm/fleet-summary-counts.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { createKeyRing } from '../src/secrets/reseal.ts';
import { buildServer } from '../src/server.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, median } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    rows: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '3' },
    random: { type: 'string', default: '40' },
  },
});
const ROWS = Number(options.rows);
const ROUNDS = Number(options.rounds);
const RANDOM_PAGES = Number(options.random);
const PER_PAGE = 30;
const ROWS_PER_STATEMENT = 50_000;
const CUSTOMER = 'lists';
const OKM = 'OKM-HISTORY';

/**
 * Stores `count` rows into `table` with INSERT … SELECT over a counter (a recursive CTE, on
 * both databases), ROWS_PER_STATEMENT a statement and a transaction: nothing but the
 * statement crosses from here to the database. `select` is the SELECT list over the counter
 * `i` (0 … count - 1), in the order of `columns`. The page-bucket triggers run as a server's
 * writes would run them (on PostgreSQL one per statement).
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

interface Target {
  list: string;
  /** The URL of a page (from 1). */
  url: (page: number) => string;
  /** How many entries the list holds. */
  entries: number;
  token: 'admin' | 'customer';
}

/** Serial numbers and ids of the same length (1000000 + i), so that text order is number order. */
const numbered = (prefix: string) => `'${prefix}' || (1000000 + i)`;

async function seed(db: Db, customerId: number, now: number): Promise<Record<string, number>> {
  const seconds: Record<string, number> = {};
  // One in 50 never polled, one in 97 overdue (an hour ago), the rest a minute ago, spread;
  // one in 4 of the polled drifting.
  seconds.okms = await store(
    db,
    'okms',
    ['serial_number', 'customer_id', 'auditing_enabled', 'status_urls', 'last_sync_time', 'last_correction', 'firmware_version', 'created_at', 'updated_at'],
    ROWS,
    `${numbered('OKM-')}, ${customerId}, 0, '[]',
      case when i % 50 = 0 then null when i % 97 = 0 then ${now - 3_600_000} - i % 1000 else ${now - 60_000} - i % 1000 end,
      case when i % 50 = 0 then null when i % 4 = 3 then 'kasDateTime' end,
      '2.1.0', ${now}, ${now}`,
  );
  seconds.acls = await store(db, 'acls', ['id', 'customer_id', 'okm_serial', 'created_at', 'updated_at'], ROWS, `${numbered('acl-')}, ${customerId}, null, ${now}, ${now}`);
  await store(db, 'acl_contents', ['acl_id', 'users', 'locks', 'user_data', 'user_count', 'lock_count'], ROWS, `${numbered('acl-')}, '[]', '[]', null, 0, 0`);
  seconds.dlocks = await store(
    db,
    'dlocks',
    ['serial_no', 'customer_id', 'certificate_name', 'certificate_json', 'key_sealed', 'created_at'],
    ROWS,
    `${numbered('LOCK-')}, ${customerId}, 'bench', '{"data":{"lock_type":"DL-1"}}', 'x', ${now}`,
  );
  seconds.pending = await store(
    db,
    'pending_okms',
    ['serial_number', 'first_seen_at', 'last_seen_at', 'last_ip', 'firmware_version', 'call_count'],
    ROWS,
    `${numbered('NEW-')}, ${now}, ${now}, '10.0.0.1', null, 1`,
  );
  await db.insertInto('okms').values({ serial_number: OKM, customer_id: customerId, auditing_enabled: 1, status_urls: '[]', created_at: now, updated_at: now }).execute();
  seconds.audit = await store(db, 'okm_audit_records', ['okm_serial', 'received_at', 'record'], ROWS, `'${OKM}', ${now}, '{"event":' || i || '}'`);
  seconds.deliveries = await store(
    db,
    'status_delivery_failures',
    ['okm_serial', 'url', 'event_id', 'attempt', 'attempted_at', 'status_code', 'error', 'outcome', 'next_attempt_at'],
    ROWS,
    `'${OKM}', 'https://hooks.example/status', 'evt-' || i, 1, ${now} - i, 500, 'HTTP 500', 'retrying', null`,
  );
  const endpoint = await db
    .insertInto('webhook_endpoints')
    .values({ customer_id: null, url: 'https://hooks.example/fleet', host: 'hooks.example', event_types: '["okm.overdue"]', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  seconds.fleetDeliveries = await store(
    db,
    'fleet_event_deliveries',
    ['endpoint_id', 'customer_id', 'url', 'host', 'event_id', 'event_type', 'payload', 'state', 'attempts', 'next_attempt_at', 'created_at'],
    ROWS,
    `${endpoint.id}, null, 'https://hooks.example/fleet', 'hooks.example', 'evt-' || i, 'okm.overdue', '{}', 'delivered', 1, ${now}, ${now} - i`,
  );
  return seconds;
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  await forEachBenchDatabase(options, async ({ name, env }) => {
    // All pages come from two tokens: the rate limit is set too high to trigger, as the other benches set it, so that its cost is measured.
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent', RATE_LIMIT_API_PER_MINUTE: '1000000000' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const customer = await createCustomer(db, CUSTOMER);
    const now = Date.now();
    const seconds = await seed(db, customer.id, now);
    console.log(`${name}: stored ${ROWS} rows a list in ${Object.entries(seconds).map(([list, s]) => `${list} ${s.toFixed(1)} s`).join(', ')} (load ${os.loadavg()[0]!.toFixed(2)})`);
    // A serving database's WAL is kept short by its checkpointer; a bulk load leaves gigabytes in it, which every read would walk.
    if (name === 'sqlite') await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    // As the server's bucket keeper does in its first seconds after a bulk load, so that its steps are not timed with the pages.
    const cutting = Date.now();
    let steps = 0;
    while ((await keepPageBuckets(db, dialect, PAGED_LISTS)) > 0) steps++;
    console.log(`${name}: buckets cut by ${steps} keeper steps in ${((Date.now() - cutting) / 1000).toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(2)})`);
    // And as its fleet summary folder does: the load appended a delta per OKM, whose fold steps would otherwise run between the timed pages.
    const folding = Date.now();
    let folds = 0;
    while ((await foldFleetSummaryDeltas(db, dialect)) > 0) folds++;
    console.log(`${name}: fleet summary deltas folded in ${folds} steps in ${((Date.now() - folding) / 1000).toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(2)})`);
    // As autovacuum and autoanalyze would have by the time a list is this long: statistics,
    // and on PostgreSQL a visibility map, so that index-only scans skip the table.
    await sql`vacuum`.execute(db);
    await sql`analyze`.execute(db);

    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    const tokens = {
      admin: (await issueToken(db, keyRing, settings, { scopes: ['admin'], ttlSeconds: 3600 })).token,
      customer: (await issueToken(db, keyRing, settings, { customer: CUSTOMER, scopes: ['okm:read', 'acl:read', 'lock:read'], ttlSeconds: 3600 })).token,
    };
    const okmEntries = ROWS + 1;
    const overdue = Math.ceil(ROWS / 97) - Math.ceil(ROWS / (97 * 50));
    const drifting = Math.floor(ROWS / 4);
    const neverPolled = Math.ceil(ROWS / 50);
    const inStep = ROWS - neverPolled - drifting;
    const endpoint = await db.selectFrom('webhook_endpoints').select('id').executeTakeFirstOrThrow();
    const targets: Target[] = [
      // The same rounds on a route that reads nothing: what the host's load adds to any request.
      { list: 'baseline: GET /healthz', url: () => '/healthz', entries: PER_PAGE, token: 'admin' },
      // A version every OKM runs: paged through its own buckets (migration 0021), a customer's and the fleet's.
      { list: 'OKMs, firmware_version=2.1.0 (every OKM)', url: (page) => `/api/v1/okms?firmware_version=2.1.0&page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'OKMs, admin, firmware_version=2.1.0 (every OKM)', url: (page) => `/api/v1/okms?firmware_version=2.1.0&page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'admin' },
      { list: 'OKMs, one customer', url: (page) => `/api/v1/okms?page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'customer' },
      { list: 'OKMs, whole fleet (admin)', url: (page) => `/api/v1/okms?page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'admin' },
      { list: 'OKMs, sort=-last_sync_time', url: (page) => `/api/v1/okms?sort=-last_sync_time&page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'customer' },
      { list: 'OKMs, sort=last_sync_time, whole fleet', url: (page) => `/api/v1/okms?sort=last_sync_time&page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'admin' },
      { list: 'OKMs, state=overdue', url: (page) => `/api/v1/okms?state=overdue&page=${page}&results_per_page=${PER_PAGE}`, entries: overdue, token: 'customer' },
      { list: 'OKMs, admin, state=overdue', url: (page) => `/api/v1/okms?state=overdue&page=${page}&results_per_page=${PER_PAGE}`, entries: overdue, token: 'admin' },
      { list: 'OKMs, admin, state=drifting', url: (page) => `/api/v1/okms?state=drifting&page=${page}&results_per_page=${PER_PAGE}`, entries: drifting, token: 'admin' },
      { list: 'OKMs, state=drifting', url: (page) => `/api/v1/okms?state=drifting&page=${page}&results_per_page=${PER_PAGE}`, entries: drifting, token: 'customer' },
      { list: 'OKMs, admin, state=in_step', url: (page) => `/api/v1/okms?state=in_step&page=${page}&results_per_page=${PER_PAGE}`, entries: inStep, token: 'admin' },
      { list: 'OKMs, state=in_step', url: (page) => `/api/v1/okms?state=in_step&page=${page}&results_per_page=${PER_PAGE}`, entries: inStep, token: 'customer' },
      { list: 'OKMs, admin, state=never_polled', url: (page) => `/api/v1/okms?state=never_polled&page=${page}&results_per_page=${PER_PAGE}`, entries: neverPolled, token: 'admin' },
      { list: 'OKMs, serial_prefix=OKM-10', url: (page) => `/api/v1/okms?serial_prefix=OKM-10&page=${page}&results_per_page=${PER_PAGE}`, entries: Math.min(ROWS, 100_000), token: 'customer' },
      { list: 'ACLs', url: (page) => `/api/v1/acls?customer=${CUSTOMER}&page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'DLocks', url: (page) => `/api/v1/locks?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'pending OKMs', url: (page) => `/api/v1/pending-okms?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'admin' },
      { list: 'audit records of one OKM', url: (page) => `/api/v1/okms/${OKM}/audit?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'deliveries of one OKM (not paged: its newest 100 failures)', url: () => `/api/v1/okms/${OKM}/deliveries`, entries: PER_PAGE, token: 'customer' },
      { list: 'deliveries of a webhook endpoint (not paged: its newest 100)', url: () => `/api/v1/webhook-endpoints/${endpoint.id}/deliveries`, entries: PER_PAGE, token: 'admin' },
    ];
    try {
      for (const target of targets) {
        const lastPage = Math.max(1, Math.ceil(target.entries / PER_PAGE));
        const timed = async (page: number) => {
          const started = process.hrtime.bigint();
          const response = await app.inject({ method: 'GET', url: target.url(page), headers: { authorization: `Bearer ${tokens[target.token]}` } });
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          if (response.statusCode !== 200) throw new Error(`${target.url(page)}: ${response.statusCode} ${response.body.slice(0, 300)}`);
          return ms;
        };
        const firstRead = await timed(lastPage);
        const byPosition: Record<'first' | 'middle' | 'last', number[]> = { first: [], middle: [], last: [] };
        const all: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          for (const [position, page] of [['first', 1], ['middle', Math.ceil(lastPage / 2)], ['last', lastPage]] as const) {
            const ms = await timed(page);
            byPosition[position].push(ms);
            all.push(ms);
          }
          for (let sample = 0; sample < RANDOM_PAGES; sample++) all.push(await timed(1 + Math.floor(Math.random() * lastPage)));
        }
        console.log(
          `${name}: ${target.list} (${target.entries} entries, ${PER_PAGE} a page): p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms over ${all.length} pages; ` +
            `median first ${median(byPosition.first).toFixed(1)}, middle ${median(byPosition.middle).toFixed(1)}, last ${median(byPosition.last).toFixed(1)} ms; ` +
            `first read ${firstRead.toFixed(0)} ms (load ${os.loadavg()[0]!.toFixed(2)})`,
        );
      }
    } finally {
      await app.close();
      await db.destroy();
    }
  });
}

await main();
