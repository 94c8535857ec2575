import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { canonicalUsersJson } from '../../src/acl/model.ts';
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
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';

const BEFORE_0015 = [initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging];

const user = (userId: number) => ({
  user_id: userId,
  pin_hash: 'a9f3',
  auth_time: 8 as const,
  sounder: false,
  sounder_delay: 0,
  sounder_duration: 0,
  sounder_volume: 2 as const,
  permissions: [1 as const, 17 as const],
});

forEachDatabase('migration 0015_acl_list_sizes', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('the ACLs stored before it get the sizes of their users and locks lists', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0015) await migration.up(store.db, context);
    const { id: customerId } = await store.db.insertInto('customers').values({ name: 'acme', created_at: 1 }).returning('id').executeTakeFirstOrThrow();
    await store.db
      .insertInto('acls')
      .values([
        { id: 'acl-three', customer_id: Number(customerId), okm_serial: null, created_at: 1, updated_at: 1 },
        { id: 'acl-empty', customer_id: Number(customerId), okm_serial: null, created_at: 1, updated_at: 1 },
      ])
      .execute();
    await sql`INSERT INTO acl_contents (acl_id, users, locks, user_data) VALUES
      ('acl-three', ${canonicalUsersJson([user(1), user(22), user(333)])}, '["LOCK-A","LOCK-B"]', NULL),
      ('acl-empty', '[]', '[]', NULL)`.execute(store.db);

    await aclListSizes.up(store.db, context);

    const rows = await store.db.selectFrom('acl_contents').select(['acl_id', 'user_count', 'lock_count']).orderBy('acl_id').execute();
    assert.deepEqual(
      rows.map((row) => ({ ...row, user_count: Number(row.user_count), lock_count: Number(row.lock_count) })),
      [
        { acl_id: 'acl-empty', user_count: 0, lock_count: 0 },
        { acl_id: 'acl-three', user_count: 3, lock_count: 2 },
      ],
    );
  });
});
