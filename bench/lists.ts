/**
 * List routes at depth (issue 14): every list stores ROWS rows (1 M by default) of one scope
 * (one customer's OKMs, ACLs and DLocks, one OKM's audit records and delivery failures, the
 * pending OKMs), stored fast (multi-row inserts in transactions), then its pages are read
 * through app.inject (the route and its queries, in process): the first, the middle, the last
 * and random ones, in rounds, for p50 and p99. Also the OKM list's filters and sorts at depth.
 * Once stored, the lists' page buckets are cut as a server's bucket keeper would (on SQLite the
 * triggers left each scope one bucket; on PostgreSQL the recount cuts them), timed apart; the
 * first page read of each list is printed apart too. SQLite, then PostgreSQL (or only the one asked for).
 *
 *   npx tsx bench/lists.ts [--sqlite] [--postgres] [--rows 1000000] [--rounds 3] [--random 40]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql, type Insertable } from 'kysely';
import { issueToken } from '../src/auth/tokens.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/repository.ts';
import type { Db } from '../src/db/database.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { cutOversizedBuckets, recountPageBuckets } from '../src/db/page-buckets.ts';
import { PAGED_LISTS } from '../src/db/paged-lists.ts';
import type { Database } from '../src/db/schema.ts';
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
const ROWS_PER_TRANSACTION = 20_000;
const CUSTOMER = 'lists';
const OKM = 'OKM-HISTORY';

/** PostgreSQL: store without triggers, then recount (see store). */
let withoutTriggers = false;

const padded = (index: number) => String(index).padStart(7, '0');

/**
 * Stores `count` rows made by `row`, in multi-row inserts of `perInsert` (under the databases'
 * bound-parameter limits), ROWS_PER_TRANSACTION a transaction. On PostgreSQL without the
 * page_buckets triggers (a PL/pgSQL call per row made a million rows take 20 minutes on this
 * host); the buckets are counted afresh once stored, as migration 0014 counts existing rows.
 */
async function store<T extends keyof Database & string>(db: Db, table: T, count: number, perInsert: number, row: (index: number) => Insertable<Database[T]>): Promise<number> {
  const started = Date.now();
  for (let start = 0; start < count; start += ROWS_PER_TRANSACTION) {
    await db.transaction().execute(async (trx) => {
      if (withoutTriggers) await sql`set local session_replication_role = replica`.execute(trx);
      for (let batch = start; batch < Math.min(start + ROWS_PER_TRANSACTION, count); batch += perInsert) {
        const rows = Array.from({ length: Math.min(perInsert, count - batch) }, (_, offset) => row(batch + offset));
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one generic table
        await trx.insertInto(table).values(rows as any).execute();
      }
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

async function seed(db: Db, customerId: number, now: number): Promise<Record<string, number>> {
  const seconds: Record<string, number> = {};
  const corrections = [null, null, null, 'kasDateTime'];
  seconds.okms = await store(db, 'okms', ROWS, 1000, (index) => ({
    serial_number: `OKM-${padded(index)}`,
    customer_id: customerId,
    auditing_enabled: 0,
    status_urls: '[]',
    // One in 50 never polled, one in 97 overdue (an hour ago), the rest a minute ago, spread.
    last_sync_time: index % 50 === 0 ? null : now - (index % 97 === 0 ? 3_600_000 : 60_000) - (index % 1000),
    last_correction: index % 50 === 0 ? null : corrections[index % corrections.length]!,
    firmware_version: '2.1.0',
    created_at: now,
    updated_at: now,
  }));
  seconds.acls = await store(db, 'acls', ROWS, 1000, (index) => ({ id: `acl-${padded(index)}`, customer_id: customerId, okm_serial: null, created_at: now, updated_at: now }));
  await store(db, 'acl_contents', ROWS, 1000, (index) => ({ acl_id: `acl-${padded(index)}`, users: '[]', locks: '[]', user_data: null, user_count: 0, lock_count: 0 }));
  seconds.dlocks = await store(db, 'dlocks', ROWS, 1000, (index) => ({
    serial_no: `LOCK-${padded(index)}`,
    customer_id: customerId,
    certificate_name: 'bench',
    certificate_json: '{"data":{"lock_type":"DL-1"}}',
    key_sealed: 'x',
    created_at: now,
  }));
  seconds.pending = await store(db, 'pending_okms', ROWS, 1000, (index) => ({
    serial_number: `NEW-${padded(index)}`,
    first_seen_at: now,
    last_seen_at: now,
    last_ip: '10.0.0.1',
    firmware_version: null,
    call_count: 1,
  }));
  await db.insertInto('okms').values({ serial_number: OKM, customer_id: customerId, auditing_enabled: 1, status_urls: '[]', created_at: now, updated_at: now }).execute();
  seconds.audit = await store(db, 'okm_audit_records', ROWS, 2000, (index) => ({ okm_serial: OKM, received_at: now, record: `{"event":${index}}` }));
  seconds.deliveries = await store(db, 'status_delivery_failures', ROWS, 1000, (index) => ({
    okm_serial: OKM,
    url: 'https://hooks.example/status',
    event_id: `evt-${index}`,
    attempt: 1,
    attempted_at: now - index,
    status_code: 500,
    error: 'HTTP 500',
    outcome: 'retrying',
    next_attempt_at: null,
  }));
  return seconds;
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  await forEachBenchDatabase(options, async ({ name, env }) => {
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const customer = await createCustomer(db, CUSTOMER);
    const now = Date.now();
    withoutTriggers = dialect.name === 'postgres';
    const seconds = await seed(db, customer.id, now);
    const cutting = Date.now();
    if (withoutTriggers) for (const list of PAGED_LISTS) await recountPageBuckets(db, list);
    let steps = 0;
    while ((await cutOversizedBuckets(db, PAGED_LISTS)) > 0) steps++;
    const cutSeconds = (Date.now() - cutting) / 1000;
    console.log(`${name}: stored ${ROWS} rows a list in ${Object.entries(seconds).map(([list, s]) => `${list} ${s.toFixed(1)} s`).join(', ')} (load ${os.loadavg()[0]!.toFixed(2)})`);
    console.log(`${name}: buckets ${withoutTriggers ? 'recounted and cut' : `cut by ${steps} keeper steps`} in ${cutSeconds.toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(2)})`);
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
    const targets: Target[] = [
      // The same rounds on a route that reads nothing: what the host's load adds to any request.
      { list: 'baseline: GET /healthz', url: () => '/healthz', entries: PER_PAGE, token: 'admin' },
      // A filter that every OKM matches: an offset walk and a count, as every list paged before page_buckets.
      { list: 'OKMs, firmware_version=2.1.0 (every OKM: offset walk and count, as before)', url: (page) => `/api/v1/okms?firmware_version=2.1.0&page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'OKMs, one customer', url: (page) => `/api/v1/okms?page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'customer' },
      { list: 'OKMs, whole fleet (admin)', url: (page) => `/api/v1/okms?page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'admin' },
      { list: 'OKMs, sort=-last_sync_time', url: (page) => `/api/v1/okms?sort=-last_sync_time&page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'customer' },
      { list: 'OKMs, sort=last_sync_time, whole fleet', url: (page) => `/api/v1/okms?sort=last_sync_time&page=${page}&results_per_page=${PER_PAGE}`, entries: okmEntries, token: 'admin' },
      { list: 'OKMs, state=overdue', url: (page) => `/api/v1/okms?state=overdue&page=${page}&results_per_page=${PER_PAGE}`, entries: overdue, token: 'customer' },
      { list: 'OKMs, admin, state=drifting (okms_drifting_idx)', url: (page) => `/api/v1/okms?state=drifting&page=${page}&results_per_page=${PER_PAGE}`, entries: Math.floor(ROWS / 4), token: 'admin' },
      { list: 'OKMs, state=drifting', url: (page) => `/api/v1/okms?state=drifting&page=${page}&results_per_page=${PER_PAGE}`, entries: Math.floor(ROWS / 4), token: 'customer' },
      { list: 'OKMs, serial_prefix=OKM-05', url: (page) => `/api/v1/okms?serial_prefix=OKM-05&page=${page}&results_per_page=${PER_PAGE}`, entries: Math.min(ROWS, 100_000), token: 'customer' },
      { list: 'ACLs', url: (page) => `/api/v1/acls?customer=${CUSTOMER}&page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'DLocks', url: (page) => `/api/v1/locks?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'pending OKMs', url: (page) => `/api/v1/pending-okms?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'admin' },
      { list: 'audit records of one OKM', url: (page) => `/api/v1/okms/${OKM}/audit?page=${page}&results_per_page=${PER_PAGE}`, entries: ROWS, token: 'customer' },
      { list: 'deliveries of one OKM (newest 100 failures)', url: () => `/api/v1/okms/${OKM}/deliveries`, entries: PER_PAGE, token: 'customer' },
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
