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
import * as statementPageBuckets from '../../src/db/migrations/0018_statement_page_buckets.ts';
import * as dropOkmsSummaryIndex from '../../src/db/migrations/0019_drop_okms_summary_index.ts';
import * as pageBucketDeltas from '../../src/db/migrations/0020_page_bucket_deltas.ts';
import * as firmwarePageBuckets from '../../src/db/migrations/0021_firmware_page_buckets.ts';
import * as statePageBuckets from '../../src/db/migrations/0022_state_page_buckets.ts';
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { MAX_BUCKET_ENTRIES, scopeTotal } from '../../src/db/page-buckets.ts';
import { OKM_STATE_LIST, stateScope } from '../../src/db/paged-lists.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';

const BEFORE_0022 = [
  initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging,
  aclListSizes, listFilters, fleetSummaryCounts, statementPageBuckets, dropOkmsSummaryIndex, pageBucketDeltas, firmwarePageBuckets,
];

const okm = (serial: string, lastSyncTime: number | null, lastCorrection: string | null) => ({
  serial_number: serial,
  customer_id: null,
  last_sync_time: lastSyncTime,
  last_correction: lastCorrection,
  auditing_enabled: 0,
  status_urls: '[]',
  created_at: 1,
  updated_at: 1,
});

forEachDatabase('migration 0022_state_page_buckets', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('the OKMs stored before it are counted once in their state and cut, whatever the triggers of the migrations before it appended, and later changes of verdict move them', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0022) await migration.up(store.db, context);
    // Every third drifting, every tenth never polled; stored after 0018 created this code's triggers of every list, this one's too.
    const okms = Array.from({ length: 2 * MAX_BUCKET_ENTRIES + 345 }, (_, n) =>
      okm(`MIG-${String(n).padStart(5, '0')}`, n % 10 === 0 ? null : 1, n % 3 === 0 ? 'kasDateTime' : null),
    );
    for (let start = 0; start < okms.length; start += 500) await store.db.insertInto('okms').values(okms.slice(start, start + 500)).execute();

    await statePageBuckets.up(store.db, context);
    await store.db.updateTable('okms').set({ last_correction: null }).where('serial_number', '=', 'MIG-00003').execute();

    const drifting = okms.filter((row) => row.serial_number !== 'MIG-00003' && row.last_correction !== null).map((row) => row.serial_number);
    const inStep = okms.filter((row) => row.serial_number === 'MIG-00003' || (row.last_correction === null && row.last_sync_time !== null)).map((row) => row.serial_number);
    assert.equal(await scopeTotal(store.db, OKM_STATE_LIST, stateScope('in_step', undefined)), inStep.length);
    assert.equal(await scopeTotal(store.db, OKM_STATE_LIST, stateScope('drifting', null)), drifting.length);
    assert.equal(await scopeTotal(store.db, OKM_STATE_LIST, stateScope('never_polled', undefined)), okms.filter((row) => row.last_sync_time === null).length);
    const oversized = await store.db.selectFrom('page_buckets').select('scope').where('list', '=', OKM_STATE_LIST.name).where('entries', '>', MAX_BUCKET_ENTRIES).execute();
    assert.deepEqual(oversized, []);
  });
});
