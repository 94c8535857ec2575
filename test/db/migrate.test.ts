import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { KEYFLEET_SOURCES } from '../helpers/cli.ts';


function keyfleet(env: Record<string, string>, ...args: string[]) {
  return spawnSync(process.execPath, [...KEYFLEET_SOURCES, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
}

forEachDatabase('keyfleet migrate', (kind) => {
  let database: TestDatabase;
  before(async () => (database = await createTestDatabase(kind)));
  after(() => database.drop());

  test('on an empty database it applies every migration, and a second run applies none', () => {
    const first = keyfleet(database.env, 'migrate', '--json');
    const second = keyfleet(database.env, 'migrate', '--json');

    assert.equal(first.status, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), { applied: ['0001_initial', '0002_pki', '0003_api_keys', '0004_dlock', '0005_acl', '0006_status_events', '0007_okm_hardening', '0008_status_fan_out', '0009_data_keys', '0010_okm_claims', '0011_okm_last_correction', '0012_fleet_events', '0013_rollouts', '0014_list_paging', '0015_acl_list_sizes', '0016_list_filters', '0017_fleet_summary_counts', '0018_statement_page_buckets', '0019_drop_okms_summary_index', '0020_page_bucket_deltas', '0021_firmware_page_buckets', '0022_state_page_buckets', '0023_lean_poll', '0024_claim_failures_per_customer', '0025_acl_names', '0026_okm_subscriber_urls', '0027_rollout_okm_list', '0028_stuck_okms', '0029_people_and_sessions', '0030_audit_trail', '0031_rollout_resume', '0032_lock_search_ignoring_case'] });
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), { applied: [] });
  });

  test('epoch-millisecond bigints come back as numbers', async () => {
    const { db } = openDatabase(dialectFor(loadSettings(database.env)));
    try {
      const now = Date.now();
      await db.insertInto('customers').values({ name: 'bigint-check', created_at: now }).execute();

      const row = await db.selectFrom('customers').select('created_at').where('name', '=', 'bigint-check').executeTakeFirstOrThrow();

      assert.strictEqual(row.created_at, now);
    } finally {
      await db.destroy();
    }
  });

  test('foreign keys are enforced', async () => {
    const { db } = openDatabase(dialectFor(loadSettings(database.env)));
    try {
      const insertOrphan = db
        .insertInto('okm_messages')
        .values({ okm_serial: 'no-such-okm', type: 't', payload: '{}', created_at: 0 })
        .execute();

      await assert.rejects(insertOrphan);
    } finally {
      await db.destroy();
    }
  });

  if (kind === 'postgres') {
    test("introspection lists only the tables of the database's own schema, so a client dropping other schemas cannot fail a migration", async () => {
      const other = await createTestDatabase('postgres');
      const { db: otherDb } = openDatabase(dialectFor(loadSettings(other.env)));
      const { db } = openDatabase(dialectFor(loadSettings(database.env)));
      try {
        await otherDb.schema.createTable('unrelated').addColumn('id', 'serial', (column) => column.primaryKey()).execute();
        const ownSchema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema;

        const tables = await db.introspection.getTables({ withInternalKyselyTables: true });

        assert.deepEqual([...new Set(tables.map((table) => table.schema))], [ownSchema]);
        assert.ok(tables.some((table) => table.name === 'okms'));
        assert.ok(tables.some((table) => table.name === 'kysely_migration'));
        assert.ok(!tables.some((table) => table.name === 'unrelated'));
      } finally {
        await db.destroy();
        await otherDb.destroy();
        await other.drop();
      }
    });
  }

  if (kind === 'sqlite') {
    test('the embedded database runs in WAL mode with a busy timeout, its file read through a memory map', async () => {
      const { db } = openDatabase(dialectFor(loadSettings(database.env)));
      try {
        const journal = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db);
        const timeout = await sql<{ timeout: number }>`pragma busy_timeout`.execute(db);
        const mapped = await sql<{ mmap_size: number }>`pragma mmap_size`.execute(db);

        assert.equal(journal.rows[0]?.journal_mode, 'wal');
        assert.equal(timeout.rows[0]?.timeout, 5000);
        assert.ok(Number(mapped.rows[0]?.mmap_size) >= 2 ** 30, `mmap_size ${mapped.rows[0]?.mmap_size}`);
      } finally {
        await db.destroy();
      }
    });
  }
});
