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
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { MAX_BUCKET_ENTRIES, scopeTotal } from '../../src/db/page-buckets.ts';
import { ALL_SCOPE, AUDIT_RECORD_LIST, OKM_LIST } from '../../src/db/paged-lists.ts';
import { appendAuditRecords } from '../../src/okm/audit-repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';

const BEFORE_0018 = [initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging, aclListSizes, listFilters, fleetSummaryCounts];

const okm = (serial: string) => ({ serial_number: serial, customer_id: null, auditing_enabled: 1, status_urls: '[]', created_at: 1, updated_at: 1 });

forEachDatabase('migration 0018_statement_page_buckets', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('the audit records stored before it are counted and cut, later ones counted as they come, and every list is counted once per row', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0018) await migration.up(store.db, context);
    await store.db.insertInto('okms').values([okm('MIG-A'), okm('MIG-B')]).execute();
    await appendAuditRecords(store.db, 'MIG-A', Array.from({ length: 2 * MAX_BUCKET_ENTRIES + 345 }, (_, n) => ({ n })), 1);

    await statementPageBuckets.up(store.db, context);
    await appendAuditRecords(store.db, 'MIG-A', [{ n: 'after' }], 2);
    await appendAuditRecords(store.db, 'MIG-B', [{ n: 1 }, { n: 2 }], 2);
    await store.db.insertInto('okms').values([okm('MIG-C'), okm('MIG-D')]).execute();
    await store.db.deleteFrom('okms').where('serial_number', '=', 'MIG-D').execute();
    // The readers of this code read what the later migrations add (0020: the deltas PostgreSQL's triggers append).
    for (const migration of [dropOkmsSummaryIndex, pageBucketDeltas]) await migration.up(store.db, context);

    const ids = (await store.db.selectFrom('okm_audit_records').select('id').where('okm_serial', '=', 'MIG-A').orderBy('id').execute()).map((row) => row.id);
    assert.equal(await scopeTotal(store.db, AUDIT_RECORD_LIST, 'MIG-A'), ids.length);
    assert.equal(await scopeTotal(store.db, AUDIT_RECORD_LIST, 'MIG-B'), 2);
    const oversized = await store.db.selectFrom('page_buckets').select('lower_key').where('list', '=', 'okm_audit_records').where('entries', '>', MAX_BUCKET_ENTRIES).execute();
    assert.deepEqual(oversized, []);
    assert.equal(await scopeTotal(store.db, OKM_LIST, ALL_SCOPE), 3);
  });
});
