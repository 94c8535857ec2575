import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { canonicalUsersJson } from '../../src/acl/model.ts';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import type { DialectStrategy } from '../../src/db/dialects/strategy.ts';
import * as initial from '../../src/db/migrations/0001_initial.ts';
import * as pki from '../../src/db/migrations/0002_pki.ts';
import * as apiKeys from '../../src/db/migrations/0003_api_keys.ts';
import * as dlock from '../../src/db/migrations/0004_dlock.ts';
import * as acl from '../../src/db/migrations/0005_acl.ts';
import * as statusEvents from '../../src/db/migrations/0006_status_events.ts';
import * as okmHardening from '../../src/db/migrations/0007_okm_hardening.ts';
import * as statusFanOut from '../../src/db/migrations/0008_status_fan_out.ts';
import * as dataKeys from '../../src/db/migrations/0009_data_keys.ts';
import * as okmClaims from '../../src/db/migrations/0010_okm_claims.ts';
import * as okmLastCorrection from '../../src/db/migrations/0011_okm_last_correction.ts';
import * as fleetEvents from '../../src/db/migrations/0012_fleet_events.ts';
import * as rollouts from '../../src/db/migrations/0013_rollouts.ts';
import * as listPaging from '../../src/db/migrations/0014_list_paging.ts';
import * as aclListSizes from '../../src/db/migrations/0015_acl_list_sizes.ts';
import * as listFilters from '../../src/db/migrations/0016_list_filters.ts';
import * as fleetSummaryCounts from '../../src/db/migrations/0017_fleet_summary_counts.ts';
import * as statementPageBuckets from '../../src/db/migrations/0018_statement_page_buckets.ts';
import * as dropOkmsSummaryIndex from '../../src/db/migrations/0019_drop_okms_summary_index.ts';
import * as pageBucketDeltas from '../../src/db/migrations/0020_page_bucket_deltas.ts';
import * as firmwarePageBuckets from '../../src/db/migrations/0021_firmware_page_buckets.ts';
import * as statePageBuckets from '../../src/db/migrations/0022_state_page_buckets.ts';
import * as leanPoll from '../../src/db/migrations/0023_lean_poll.ts';
import * as claimFailuresPerCustomer from '../../src/db/migrations/0024_claim_failures_per_customer.ts';
import * as aclNames from '../../src/db/migrations/0025_acl_names.ts';
import type { AnyDb, MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { MIGRATIONS } from '../../src/db/migrate.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, ALL_ACL_SCOPES, aclUser, call } from './helpers.ts';

const BEFORE_0025 = [
  initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging,
  aclListSizes, listFilters, fleetSummaryCounts, statementPageBuckets, dropOkmsSummaryIndex, pageBucketDeltas, firmwarePageBuckets, statePageBuckets, leanPoll,
  claimFailuresPerCustomer,
];

const OLD_STORE = '6f1c2a40-0000-4000-8000-000000000001';
const OLD_DEPOT = '6f1c2a40-0000-4000-8000-000000000002';
const OLD_EMPTY = '6f1c2a40-0000-4000-8000-000000000003';
const OLD_BETA = '6f1c2a40-0000-4000-8000-000000000004';

forEachDatabase('migration 0025_acl_names', (kind) => {
  let database: TestDatabase;
  let db: Db;
  let dialect: DialectStrategy;
  let old: AnyDb;
  let t: TestApp | undefined;
  before(async () => {
    database = await createTestDatabase(kind);
    ({ db, dialect } = openDatabase(dialectFor(loadSettings({ LOG_LEVEL: 'silent', ...database.env }))));
    old = db as unknown as AnyDb;
  });
  after(async () => {
    if (t) await t.app.close();
    await db.destroy();
    await database.drop();
  });

  test('the ACLs stored before it are found by their users and locks, and have no name', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0025) await migration.up(old, context);
    const customerIds: Record<string, number> = {};
    for (const name of ['acme', 'beta']) {
      const { id } = await old.insertInto('customers').values({ name, created_at: 1 }).returning('id').executeTakeFirstOrThrow();
      customerIds[name] = Number(id);
    }
    const oldAcl = async (id: string, customer: string, userIds: number[], locks: string[]) => {
      await old.insertInto('acls').values({ id, customer_id: customerIds[customer], okm_serial: null, created_at: 1, updated_at: 1 }).execute();
      const users = canonicalUsersJson(userIds.map((userId) => aclUser(userId, locks.map(() => 1)) as Parameters<typeof canonicalUsersJson>[0][number]));
      await sql`INSERT INTO acl_contents (acl_id, users, locks, user_data, user_count, lock_count)
        VALUES (${id}, ${users}, ${JSON.stringify(locks)}, '{"site":"Store 412"}', ${userIds.length}, ${locks.length})`.execute(old);
    };
    await oldAcl(OLD_STORE, 'acme', [7, 999_999_999], ['DOOR-1', 'DOOR-2']);
    await oldAcl(OLD_DEPOT, 'acme', [7], ['DOOR-2']);
    await oldAcl(OLD_EMPTY, 'acme', [], []);
    await oldAcl(OLD_BETA, 'beta', [7], ['DOOR-1']);

    await aclNames.up(old, context);

    const users = await old.selectFrom('acl_users').select(['acl_id', 'customer_id', 'user_id']).orderBy('acl_id').orderBy('user_id').execute();
    const locks = await old.selectFrom('acl_locks').select(['acl_id', 'customer_id', 'lock_serial']).orderBy('acl_id').orderBy('lock_serial').execute();
    const names = await old.selectFrom('acls').select(['id', 'name', 'name_key']).orderBy('id').execute();
    const { acme, beta } = customerIds as { acme: number; beta: number };
    assert.deepEqual(
      users.map((row) => ({ ...row, customer_id: Number(row.customer_id), user_id: Number(row.user_id) })),
      [
        { acl_id: OLD_STORE, customer_id: acme, user_id: 7 },
        { acl_id: OLD_STORE, customer_id: acme, user_id: 999_999_999 },
        { acl_id: OLD_DEPOT, customer_id: acme, user_id: 7 },
        { acl_id: OLD_BETA, customer_id: beta, user_id: 7 },
      ],
    );
    assert.deepEqual(
      locks.map((row) => ({ ...row, customer_id: Number(row.customer_id) })),
      [
        { acl_id: OLD_STORE, customer_id: acme, lock_serial: 'DOOR-1' },
        { acl_id: OLD_STORE, customer_id: acme, lock_serial: 'DOOR-2' },
        { acl_id: OLD_DEPOT, customer_id: acme, lock_serial: 'DOOR-2' },
        { acl_id: OLD_BETA, customer_id: beta, lock_serial: 'DOOR-1' },
      ],
    );
    assert.deepEqual(names, [OLD_STORE, OLD_DEPOT, OLD_EMPTY, OLD_BETA].map((id) => ({ id, name: null, name_key: null })));
  });

  test('after it, the app lists, searches, names and deletes the old ACLs', async () => {
    // The database of the test above, migrated by hand to the latest, as an upgrade does (the migrator has recorded nothing, and need not).
    for (const [name, migration] of Object.entries(MIGRATIONS)) if (name > '0025_acl_names') await migration.up(old, { kind: dialect.name });
    const settings = loadSettings({ LOG_LEVEL: 'silent', FLEET_PASS_INTERVAL_MS: '0', WEBHOOK_DISPATCH_IN_SERVER: 'false', ...database.env });
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    t = { app, db, dialect, settings, database, close: async () => {} };
    const token = await issueTestToken(t, { customer: 'acme', scopes: ALL_ACL_SCOPES });
    const ids = async (query: string) => (await call(t!, 'GET', `${ACLS}?customer=acme${query}`, { token })).json().data.map((item: { id: string }) => item.id);

    assert.deepEqual(await ids(''), [OLD_STORE, OLD_DEPOT, OLD_EMPTY]);
    assert.deepEqual(await ids('&user_id=7'), [OLD_STORE, OLD_DEPOT]);
    assert.deepEqual(await ids('&user_id=999999999'), [OLD_STORE]);
    assert.deepEqual(await ids('&lock=DOOR-1'), [OLD_STORE]);
    const fetched = (await call(t, 'GET', `${ACLS}/${OLD_STORE}`, { token })).json().data;
    assert.equal('name' in fetched, false);

    const named = await call(t, 'PUT', `${ACLS}/${OLD_STORE}`, { token, payload: { ...fetched, name: 'Store 412' } });
    assert.equal(named.statusCode, 200, named.body);
    assert.deepEqual(await ids('&name_contains=store'), [OLD_STORE]);
    assert.deepEqual(await ids('&user_id=7'), [OLD_STORE, OLD_DEPOT]);

    assert.equal((await call(t, 'DELETE', `${ACLS}/${OLD_DEPOT}`, { token })).statusCode, 204);
    assert.deepEqual(await ids('&user_id=7'), [OLD_STORE]);
    assert.deepEqual(await ids('&lock=DOOR-2'), [OLD_STORE]);
  });
});
