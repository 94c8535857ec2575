/**
 * ACL benchmark: one ACL of 5 000 users × 1 000 locks (linked to an OKM), its POST and GET
 * latency and the server's peak RSS growth meanwhile; then list throughput with 100 000
 * ACLs stored, against a bare node:http server under the same requests. SQLite, and
 * PostgreSQL when reachable.
 *
 *   npx tsx bench/acl.ts [--sqlite] [--postgres] [--acls 100000] [--users 5000] [--locks 1000]
 *                        [--repeat 3] [--duration 10] [--connections 100]
 *
 * The server's peak RSS comes from Linux's /proc/<pid>/status (VmHWM, reset through
 * clear_refs before the big requests).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql, type Insertable } from 'kysely';
import { canonicalUsersJson } from '../src/acl/model.ts';
import type { AclUser } from '../src/acl/schemas.ts';
import { issueToken } from '../src/auth/tokens.ts';
import { createCustomer } from '../src/customers/service.ts';
import type { AclsTable } from '../src/db/schema.ts';
import { UNCONFIGURED_OKM } from '../src/okm/model.ts';
import { insertOkm } from '../src/okm/repository.ts';
import { createKeyRing } from '../src/key-ring.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, measure, printFigures, startBare, startKeyfleet, stop, withDb, type Figures, type Load } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    acls: { type: 'string', default: '100000' },
    users: { type: 'string', default: '5000' },
    locks: { type: 'string', default: '1000' },
    repeat: { type: 'string', default: '3' },
  },
});
const ACL_COUNT = Number(options.acls);
const USERS = Number(options.users);
const LOCKS = Number(options.locks);
const REPEAT = Number(options.repeat);
const CONNECTIONS = Number(options.connections);
const DURATION_S = Number(options.duration);
const PER_PAGE = 30;
const LISTED = 'bench';
const BIG = 'big';
const BIG_OKM = 'OKM-BIG-ACL';

// ---- the ACLs ----

const lockSerials = (count: number) => Array.from({ length: count }, (_, index) => `LOCK-${String(index).padStart(6, '0')}`);

function users(count: number, lockCount: number): AclUser[] {
  return Array.from({ length: count }, (_, index) => ({
    user_id: 100_000 + index,
    pin_hash: randomBytes(16).toString('hex'),
    auth_time: 8,
    sounder: index % 2 === 0,
    sounder_delay: 10,
    sounder_duration: 30,
    sounder_volume: 2,
    permissions: Array.from({ length: lockCount }, (_, lock) => ([0, 1, 17] as const)[(index + lock) % 3]!),
  }));
}

/** The body of the big ACL, linked to the OKM, as a client sends it. */
const bigAclBody = (id: string) =>
  JSON.stringify({ id, customer: BIG, users: users(USERS, LOCKS), locks: lockSerials(LOCKS), user_data: { site: 'bench', note: 'x'.repeat(1000) }, okm_id: BIG_OKM });

const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 10_000;

interface Seeded {
  listToken: string;
  bigToken: string;
}

/** Migrates a fresh database; stores ACL_COUNT small ACLs (2 users × 3 locks) of one customer and an OKM of another; issues their tokens. */
async function seed(env: Record<string, string>): Promise<Seeded> {
  return withDb(env, async (db, settings) => {
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    const listed = await createCustomer(db, LISTED);
    const big = await createCustomer(db, BIG);
    const now = Date.now();
    await insertOkm(db, BIG_OKM, big.id, UNCONFIGURED_OKM, now);
    const locks = lockSerials(3);
    const small = { users: canonicalUsersJson(users(2, 3)), locks: JSON.stringify(locks), user_data: '{"site":"bench"}', user_count: 2, lock_count: locks.length };
    for (let start = 0; start < ACL_COUNT; start += ROWS_PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        for (let batch = start; batch < Math.min(start + ROWS_PER_TRANSACTION, ACL_COUNT); batch += ROWS_PER_INSERT) {
          const ids = Array.from({ length: Math.min(ROWS_PER_INSERT, ACL_COUNT - batch) }, () => randomUUID());
          const rows: Insertable<AclsTable>[] = ids.map((id) => ({ id, customer_id: listed.id, okm_serial: null, created_at: now, updated_at: now }));
          await trx.insertInto('acls').values(rows).execute();
          await trx.insertInto('acl_contents').values(ids.map((id) => ({ acl_id: id, ...small }))).execute();
        }
      });
    }
    // As autovacuum would have done by the time a customer has this many ACLs: statistics, and
    // on PostgreSQL a visibility map, so that counting can use the index alone.
    await sql`vacuum`.execute(db);
    await sql`analyze`.execute(db);
    const token = async (customer: string) =>
      (await issueToken(db, keyRing, settings, { customer, scopes: ['acl:read', 'acl:create', 'acl:delete'], ttlSeconds: 3600 })).token;
    return { listToken: await token(LISTED), bigToken: await token(BIG) };
  });
}

// ---- the big ACL ----

const KIB = 1024;

function memoryKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]);
}

async function timed(request: () => Promise<Response>, expectedStatus: number): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const response = await request();
  const body = await response.arrayBuffer();
  const ms = performance.now() - started;
  if (response.status !== expectedStatus) throw new Error(`expected ${expectedStatus}, got ${response.status}: ${Buffer.from(body).toString().slice(0, 300)}`);
  return { ms, bytes: body.byteLength };
}

interface BigAclFigures {
  database: string;
  postMs: number[];
  getMs: number[];
  requestBytes: number;
  responseBytes: number;
  rssAtStartMiB: number;
  /** Peak RSS during each POST + GET over the RSS just before it. */
  growthPerRunMiB: number[];
  peakRssMiB: number;
}

async function benchBigAcl(database: string, port: number, pid: number, token: string): Promise<BigAclFigures> {
  const id = randomUUID();
  const body = bigAclBody(id);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const url = `http://127.0.0.1:${port}/api/v1/acls`;
  const rssAtStart = memoryKiB(pid, 'VmRSS');
  const figures: BigAclFigures = {
    database,
    postMs: [],
    getMs: [],
    requestBytes: Buffer.byteLength(body),
    responseBytes: 0,
    rssAtStartMiB: rssAtStart / KIB,
    growthPerRunMiB: [],
    peakRssMiB: 0,
  };
  for (let run = 0; run < REPEAT; run++) {
    // Resets the peak (VmHWM) to the current RSS.
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const rssBefore = memoryKiB(pid, 'VmRSS');
    // The first POST creates the ACL, the others overwrite it.
    figures.postMs.push((await timed(() => fetch(`${url}/`, { method: 'POST', headers, body }), 201)).ms);
    const fetched = await timed(() => fetch(`${url}/${id}`, { headers }), 200);
    figures.getMs.push(fetched.ms);
    figures.responseBytes = fetched.bytes;
    const peak = memoryKiB(pid, 'VmHWM');
    figures.growthPerRunMiB.push((peak - rssBefore) / KIB);
    figures.peakRssMiB = Math.max(figures.peakRssMiB, peak / KIB);
  }
  return figures;
}

// ---- the list ----

const pages = Math.max(1, Math.ceil(ACL_COUNT / PER_PAGE));
const listPath = (page: number) => `/api/v1/acls?customer=${LISTED}&page=${page}&results_per_page=${PER_PAGE}`;

const listLoad = (token: string, pageOf: () => number): Load => ({
  connections: CONNECTIONS,
  seconds: DURATION_S,
  next: () => ({ path: listPath(pageOf()), headers: { authorization: `Bearer ${token}` } }),
});
const randomPage = () => 1 + Math.floor(Math.random() * pages);

async function benchDatabase(name: string, env: Record<string, string>, bigFigures: BigAclFigures[], listFigures: Figures[]): Promise<string> {
  const seeding = Date.now();
  const { listToken, bigToken } = await seed(env);
  console.log(`${name}: stored ${ACL_COUNT} ACLs in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
  const { port, child } = await startKeyfleet(env);
  try {
    bigFigures.push(await benchBigAcl(name, port, child.pid!, bigToken));
    listFigures.push(await measure(`keyfleet ${name}, list, random page of ${pages}`, port, listLoad(listToken, randomPage)));
    listFigures.push(await measure(`keyfleet ${name}, list, page 1`, port, listLoad(listToken, () => 1)));
    const sample = await fetch(`http://127.0.0.1:${port}${listPath(1)}`, { headers: { authorization: `Bearer ${listToken}` } });
    return await sample.text();
  } finally {
    await stop(child);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const bigFigures: BigAclFigures[] = [];
  const listFigures: Figures[] = [];
  let sampleBody = '{}';
  await forEachBenchDatabase(options, async ({ name, env }) => {
    sampleBody = await benchDatabase(name, env, bigFigures, listFigures);
  });
  // The bare server answers with a page of the list, so that both send as many bytes.
  const bare = await startBare(sampleBody);
  let bareFigures: Figures;
  try {
    bareFigures = await measure('bare node:http (same body as a page)', bare.port, listLoad('none', randomPage));
  } finally {
    await stop(bare.child);
  }

  const ms = (values: number[]) => values.map((value) => Math.round(value)).join(' / ');
  console.log(`\nbig ACL: ${USERS} users × ${LOCKS} locks, linked to an OKM; ${REPEAT} × (POST, GET); ${os.cpus().length} CPUs`);
  console.table(
    bigFigures.map((entry) => ({
      database: entry.database,
      'request MB': (entry.requestBytes / 1e6).toFixed(1),
      'response MB': (entry.responseBytes / 1e6).toFixed(1),
      'POST ms (create, overwrites)': ms(entry.postMs),
      'GET ms': ms(entry.getMs),
      'RSS growth per POST+GET MiB': ms(entry.growthPerRunMiB),
      'RSS at start MiB': Math.round(entry.rssAtStartMiB),
      'peak RSS MiB': Math.round(entry.peakRssMiB),
      'peak growth over all MiB': Math.round(entry.peakRssMiB - entry.rssAtStartMiB),
    })),
  );
  console.log(`\nlist: ${CONNECTIONS} connections, ${DURATION_S} s per target after a warm-up, ${ACL_COUNT} ACLs of 2 users × 3 locks, ${PER_PAGE} a page`);
  printFigures([bareFigures, ...listFigures], () => bareFigures);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
