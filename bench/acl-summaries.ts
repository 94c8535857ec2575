/**
 * The console's ACL list page (issue 12): one page of a customer's 20 ACLs at the caps (5 000
 * users × 1 000 locks each by default) read as whole ACLs (GET /api/v1/acls) and as summaries
 * (GET /api/v1/acl-summaries), through app.inject (the route and its queries, in process), in
 * alternating rounds; median time and bytes of each, with the host's load. SQLite, then
 * PostgreSQL (or only the one asked for).
 *
 *   npx tsx bench/acl-summaries.ts [--sqlite] [--postgres] [--acls 20] [--users 5000] [--locks 1000] [--rounds 5]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { canonicalUsersJson } from '../src/acl/model.ts';
import { insertAcl } from '../src/acl/repository.ts';
import { issueToken } from '../src/auth/tokens.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/service.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { createKeyRing } from '../src/key-ring.ts';
import { buildServer } from '../src/server.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, median } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    acls: { type: 'string', default: '20' },
    users: { type: 'string', default: '5000' },
    locks: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '5' },
  },
});
const ACLS = Number(options.acls);
const USERS = Number(options.users);
const LOCKS = Number(options.locks);
const ROUNDS = Number(options.rounds);
const CUSTOMER = 'shops';

/** One ACL's stored texts, as a write at the caps stores them (a mix of 0, 1 and 17). */
function aclContent() {
  const locks = Array.from({ length: LOCKS }, (_, index) => `DOOR-${String(index).padStart(5, '0')}`);
  const users = Array.from({ length: USERS }, (_, index) => ({
    user_id: 100_000 + index,
    pin_hash: `a9f${index.toString(16)}`,
    auth_time: 8 as const,
    sounder: false,
    sounder_delay: 0,
    sounder_duration: 0,
    sounder_volume: 2 as const,
    permissions: locks.map((_, lock) => ([0, 1, 0, 17] as const)[(index + lock) % 4]!),
  }));
  return { usersJson: canonicalUsersJson(users), locksJson: JSON.stringify(locks), userDataJson: '{"site":"Store 412"}', userCount: users.length, lockCount: locks.length };
}

await forEachBenchDatabase(options, async ({ name, env }) => {
  const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent', ACL_MAX_USERS: String(USERS), ACL_MAX_LOCKS: String(LOCKS) });
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  const keyRing = createKeyRing(db, loadMasterKey(settings));
  await keyRing.refresh();
  const customer = await createCustomer(db, CUSTOMER);
  const content = aclContent();
  for (let index = 0; index < ACLS; index++) await insertAcl(db, randomUUID(), customer.id, content, Date.now());
  const app = await buildServer({ settings, db, dialect, keyRing });
  await app.ready();
  const token = (await issueToken(db, keyRing, settings, { customer: CUSTOMER, scopes: ['acl:read'], ttlSeconds: 3600 })).token;
  const query = `customer=${CUSTOMER}&results_per_page=${ACLS}`;
  const routes = { 'GET /api/v1/acls (whole ACLs)': `/api/v1/acls?${query}`, 'GET /api/v1/acl-summaries': `/api/v1/acl-summaries?${query}` };
  const times = new Map<string, number[]>(Object.keys(routes).map((route) => [route, []]));
  const bytes = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [route, url] of Object.entries(routes)) {
      const started = performance.now();
      const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
      times.get(route)!.push(performance.now() - started);
      if (response.statusCode !== 200) throw new Error(`${route}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      bytes.set(route, response.rawPayload.length);
    }
  }
  console.log(`${name}: ${ACLS} ACLs of ${USERS} users × ${LOCKS} locks, ${ROUNDS} alternating rounds, load ${os.loadavg().map((load) => load.toFixed(2)).join(' ')}`);
  console.table(Object.keys(routes).map((route) => ({ route, 'median ms': Math.round(median(times.get(route)!)), 'max ms': Math.round(Math.max(...times.get(route)!)), bytes: bytes.get(route) })));
  await app.close();
  await db.destroy();
});
