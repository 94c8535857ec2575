import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { freshGroups, keptGroups } from './fleet-summary-helpers.ts';

const BEFORE_0017 = [initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging, aclListSizes, listFilters];

forEachDatabase('migration 0017_fleet_summary_counts', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('the OKMs stored before it are counted in their groups, and writes after it are kept', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0017) await migration.up(store.db, context);
    const { id: customerId } = await store.db.insertInto('customers').values({ name: 'acme', created_at: 1 }).returning('id').executeTakeFirstOrThrow();
    const okm = (serial: string, columns: Record<string, unknown>) => ({ serial_number: serial, auditing_enabled: 0, status_urls: '[]', created_at: 1, updated_at: 1, ...columns });
    await store.db
      .insertInto('okms')
      .values([
        okm('M-1', { customer_id: null }),
        okm('M-2', { customer_id: Number(customerId), last_sync_time: 5, firmware_version: '2.0.0', due_by: 10, overdue_at: null }),
        okm('M-3', { customer_id: Number(customerId), last_sync_time: 5, firmware_version: '2.0.0', due_by: 10, overdue_at: null }),
        okm('M-4', { customer_id: Number(customerId), last_sync_time: 5, firmware_version: '2.1.0', last_correction: 'kasDateTime', wireless_key_firmware_version: '3.0', due_by: 10, overdue_at: 20 }),
      ])
      .execute();

    await fleetSummaryCounts.up(store.db, context);

    const counted = await keptGroups(store.db);
    assert.deepEqual(counted, await freshGroups(store.db));
    assert.equal(counted.length, 3);
    await store.db.updateTable('okms').set({ customer_id: null, overdue_at: null }).where('serial_number', '=', 'M-4').execute();
    await store.db.deleteFrom('okms').where('serial_number', '=', 'M-2').execute();
    assert.deepEqual(await keptGroups(store.db), await freshGroups(store.db));
  });
});
