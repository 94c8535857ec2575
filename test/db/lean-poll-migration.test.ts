import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
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
import { MIGRATIONS } from '../../src/db/migrate.ts';
import type { AnyDb, MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from '../helpers/databases.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, OKMS } from '../okm/admin-helpers.ts';
import { poll } from '../device/config-helpers.ts';
import { comparableSummary, countSummary, dueBefore, fleetRows } from '../fleet/fleet-summary-helpers.ts';

const BEFORE_0023 = [
  initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection, fleetEvents, rollouts, listPaging,
  aclListSizes, listFilters, fleetSummaryCounts, statementPageBuckets, dropOkmsSummaryIndex, pageBucketDeltas, firmwarePageBuckets, statePageBuckets,
];

/** What 0023 moves from okms to okm_polls, and the due time it drops. */
const MOVED_COLUMNS = ['last_sync_time', 'last_ip', 'reported', 'install_code', 'status_queued_at', 'due_by'];
/** The tables of the page buckets and of the summary's kept counts. */
const DROPPED_TABLES = ['page_buckets', 'page_bucket_deltas', 'page_bucket_folder', 'fleet_summary_counts', 'fleet_summary_deltas', 'fleet_summary_folder'];

const MINUTE = 60_000;
const NOW = Date.now();
const POLLED_AT = NOW - 10 * 24 * 60 * MINUTE;
const MARKED_AT = POLLED_AT + 30 * MINUTE;

async function columnsOf(db: AnyDb, kind: DatabaseKind, table: string): Promise<string[]> {
  if (kind === 'sqlite') return (await sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})`.execute(db)).rows.map((row) => row.name);
  const { rows } = await sql<{ column_name: string }>`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table}`.execute(db);
  return rows.map((row) => row.column_name);
}

async function tablesOf(db: AnyDb, kind: DatabaseKind): Promise<string[]> {
  if (kind === 'sqlite') return (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(db)).rows.map((row) => row.name);
  return (await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`.execute(db)).rows.map((row) => row.table_name);
}

async function triggersOf(db: AnyDb, kind: DatabaseKind): Promise<string[]> {
  if (kind === 'sqlite') return (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'trigger'`.execute(db)).rows.map((row) => row.name);
  const { rows } = await sql<{ name: string }>`
    SELECT t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal AND n.nspname = current_schema()`.execute(db);
  return rows.map((row) => row.name);
}

async function plpgsqlFunctionsOf(db: AnyDb): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
    WHERE n.nspname = current_schema() AND l.lanname = 'plpgsql'`.execute(db);
  return rows.map((row) => row.name);
}

async function countRows(db: AnyDb, table: string): Promise<number> {
  const row = await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** An okms row as the schema before 0023 had it. */
const oldOkm = (serial: string, columns: Record<string, unknown>) => ({
  serial_number: serial,
  customer_id: null,
  auditing_enabled: 0,
  status_urls: '[]',
  reported: null,
  install_code: null,
  last_sync_time: null,
  last_ip: null,
  firmware_version: null,
  batch_key_firmware_version: null,
  wireless_key_firmware_version: null,
  last_correction: null,
  status_queued_at: null,
  due_by: null,
  overdue_at: null,
  created_at: POLLED_AT - MINUTE,
  updated_at: POLLED_AT - MINUTE,
  ...columns,
});

forEachDatabase('migration 0023_lean_poll', (kind) => {
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

  const due = (polledAt: number, interval: number) => polledAt + 3 * interval * 1000;

  test('what polls wrote moves to okm_polls for the OKMs that polled, the never polled are marked 0, and every trigger, function and kept count goes', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0023) await migration.up(old, context);
    const { id } = await old.insertInto('customers').values({ name: 'acme', created_at: 1 }).returning('id').executeTakeFirstOrThrow();
    const acme = Number(id);
    await old
      .insertInto('okms')
      .values([
        // Polled, in step, with an installer code and reported values, held by acme and linked to an ACL.
        oldOkm('OLD-STEADY', {
          customer_id: acme,
          reported: '{"kasFirmware":"2.0.0","installCode":"123456"}',
          install_code: '123456',
          last_sync_time: POLLED_AT,
          last_ip: '10.0.0.1',
          firmware_version: '2.0.0',
          due_by: due(POLLED_AT, 150),
        }),
        // Polled, with subscribers, its status waiting for the fan-out.
        oldOkm('OLD-STATUS', {
          customer_id: acme,
          status_urls: '["https://hooks.example/status"]',
          reported: '{}',
          last_sync_time: POLLED_AT,
          last_ip: '10.0.0.2',
          status_queued_at: POLLED_AT,
          due_by: due(POLLED_AT, 150),
        }),
        // Polled, then found silent by the sweep.
        oldOkm('OLD-OVERDUE', { customer_id: acme, reported: '{}', last_sync_time: POLLED_AT, last_ip: '10.0.0.3', due_by: due(POLLED_AT, 150), overdue_at: MARKED_AT }),
        // Polled and answered with a correction, with all three versions reported; its own interval.
        oldOkm('OLD-DRIFTING', {
          customer_id: acme,
          polling_interval: 60,
          reported: '{}',
          last_sync_time: POLLED_AT,
          last_ip: '10.0.0.4',
          firmware_version: '2.1.0',
          batch_key_firmware_version: '1.1',
          wireless_key_firmware_version: '3.0',
          last_correction: 'kasDateTime',
          due_by: due(POLLED_AT, 60),
        }),
        // Polled before the IP and the reported values were recorded (both NULL).
        oldOkm('OLD-BARE', { last_sync_time: POLLED_AT, due_by: due(POLLED_AT, 150) }),
        // Accepted from pending: its last call recorded, waiting for its first poll as an OKM.
        oldOkm('OLD-ACCEPTED', { last_sync_time: POLLED_AT, last_ip: '10.0.0.5', firmware_version: '1.0.0', overdue_at: 0 }),
        // Created through the API and never polled: since 0012 marked 0, before it NULL.
        oldOkm('OLD-NEVER', { customer_id: acme, overdue_at: 0 }),
        oldOkm('OLD-NEVER-NULL', { overdue_at: null }),
      ])
      .execute();
    await old.insertInto('acls').values({ id: 'acl-old', customer_id: acme, okm_serial: 'OLD-STEADY', created_at: 1, updated_at: 1 }).execute();
    await old.insertInto('acl_contents').values({ acl_id: 'acl-old', users: '[]', locks: '[]', user_data: null, user_count: 0, lock_count: 0 }).execute();
    await old
      .insertInto('pending_okms')
      .values([
        { serial_number: 'PENDING-1', first_seen_at: POLLED_AT, last_seen_at: POLLED_AT, last_ip: '10.0.1.1', firmware_version: null, call_count: 3 },
        { serial_number: 'PENDING-2', first_seen_at: POLLED_AT, last_seen_at: POLLED_AT, last_ip: '10.0.1.2', firmware_version: '1.0.0', call_count: 1 },
      ])
      .execute();
    // What the triggers kept is there to be dropped.
    assert.ok((await countRows(old, 'page_buckets')) + (await countRows(old, 'page_bucket_deltas')) > 0);
    assert.ok((await countRows(old, 'fleet_summary_counts')) + (await countRows(old, 'fleet_summary_deltas')) > 0);
    assert.ok((await triggersOf(old, kind)).length > 0);

    await leanPoll.up(old, context);

    const polls = await old.selectFrom('okm_polls').selectAll().orderBy('serial_number').execute();
    assert.deepEqual(
      polls.map((row) => ({ ...row, last_sync_time: Number(row.last_sync_time), status_queued_at: row.status_queued_at === null ? null : Number(row.status_queued_at) })),
      [
        { serial_number: 'OLD-ACCEPTED', last_sync_time: POLLED_AT, last_ip: '10.0.0.5', reported: '{}', install_code: null, status_queued_at: null },
        { serial_number: 'OLD-BARE', last_sync_time: POLLED_AT, last_ip: '', reported: '{}', install_code: null, status_queued_at: null },
        { serial_number: 'OLD-DRIFTING', last_sync_time: POLLED_AT, last_ip: '10.0.0.4', reported: '{}', install_code: null, status_queued_at: null },
        { serial_number: 'OLD-OVERDUE', last_sync_time: POLLED_AT, last_ip: '10.0.0.3', reported: '{}', install_code: null, status_queued_at: null },
        { serial_number: 'OLD-STATUS', last_sync_time: POLLED_AT, last_ip: '10.0.0.2', reported: '{}', install_code: null, status_queued_at: POLLED_AT },
        { serial_number: 'OLD-STEADY', last_sync_time: POLLED_AT, last_ip: '10.0.0.1', reported: '{"kasFirmware":"2.0.0","installCode":"123456"}', install_code: '123456', status_queued_at: null },
      ],
    );
    const okms = await old.selectFrom('okms').select(['serial_number', 'overdue_at', 'customer_id', 'last_correction', 'firmware_version', 'polling_interval']).orderBy('serial_number').execute();
    assert.deepEqual(
      okms.map((row) => [row.serial_number, row.overdue_at === null ? null : Number(row.overdue_at)]),
      [
        ['OLD-ACCEPTED', 0],
        ['OLD-BARE', null],
        ['OLD-DRIFTING', null],
        ['OLD-NEVER', 0],
        ['OLD-NEVER-NULL', 0],
        ['OLD-OVERDUE', MARKED_AT],
        ['OLD-STATUS', null],
        ['OLD-STEADY', null],
      ],
    );
    assert.deepEqual(
      okms.find((row) => row.serial_number === 'OLD-DRIFTING'),
      { serial_number: 'OLD-DRIFTING', overdue_at: null, customer_id: okms.find((row) => row.serial_number === 'OLD-DRIFTING')!.customer_id, last_correction: 'kasDateTime', firmware_version: '2.1.0', polling_interval: 60 },
    );
    const okmColumns = await columnsOf(old, kind, 'okms');
    assert.deepEqual(
      MOVED_COLUMNS.filter((column) => okmColumns.includes(column)),
      [],
    );
    assert.ok(okmColumns.includes('overdue_at') && okmColumns.includes('last_correction'));
    assert.deepEqual(await triggersOf(old, kind), []);
    if (kind === 'postgres') {
      assert.deepEqual(await plpgsqlFunctionsOf(old), []);
      // Room on each page of okm_polls for a poll's next row version: a HOT update (test/device/steady-poll.test.ts).
      const { rows } = await sql<{ reloptions: string[] | null }>`SELECT reloptions FROM pg_class WHERE oid = 'okm_polls'::regclass`.execute(old);
      assert.deepEqual(rows[0]?.reloptions, ['fillfactor=60']);
    }
    const tables = await tablesOf(old, kind);
    assert.deepEqual(
      DROPPED_TABLES.filter((table) => tables.includes(table)),
      [],
    );
    assert.ok(['okm_polls', 'fleet_summary_snapshot', 'background_passes'].every((table) => tables.includes(table)));
    assert.equal(await countRows(old, 'pending_okms'), 2);
    assert.deepEqual(await old.selectFrom('acls').select(['id', 'okm_serial']).execute(), [{ id: 'acl-old', okm_serial: 'OLD-STEADY' }]);
    assert.equal(await countRows(old, 'acl_contents'), 1);
    assert.deepEqual(await old.selectFrom('background_passes').selectAll().execute(), []);
    assert.deepEqual(await old.selectFrom('fleet_summary_snapshot').selectAll().execute(), []);
  });

  test('after it, the app polls the old OKMs (steady, marked, never polled, accepted) and a fleet pass counts them all', async () => {
    // The database of the test above, migrated by hand up to 0023 (the migrator has recorded nothing, and need not),
    // then by the migrations after it, in order: the app runs on today's schema.
    for (const [name, migration] of Object.entries(MIGRATIONS)) if (name > '0023_lean_poll') await migration.up(old, { kind });
    const settings = loadSettings({ LOG_LEVEL: 'silent', FLEET_PASS_INTERVAL_MS: '0', WEBHOOK_DISPATCH_IN_SERVER: 'false', RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0', ...database.env });
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    t = { app, db, dialect, settings, database, close: async () => {} };
    const admin = await issueTestToken(t, { scopes: ['admin'] });
    const endpoint = await call(t, 'POST', '/api/v1/webhook-endpoints', {
      token: admin,
      payload: { url: 'https://hooks.example/fleet', event_types: ['okm.enrolled', 'okm.back_online', 'okm.overdue'] },
    });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const eventsOf = async (type: string) =>
      (await db.selectFrom('fleet_event_deliveries').select('payload').where('event_type', '=', type).execute()).map((row) => JSON.parse(row.payload).data.serial_number as string).sort();
    const okmRow = (serial: string) => db.selectFrom('okms').selectAll().where('serial_number', '=', serial).executeTakeFirstOrThrow();
    const pollRow = (serial: string) => db.selectFrom('okm_polls').selectAll().where('serial_number', '=', serial).executeTakeFirst();
    const inStep = { kasFirmware: '2.0.0', kasDateTime: Date.now(), cacheMode: 1, auditUrl: settings.auditUrl, pollingInterval: settings.fleetPollingInterval };

    const steadyBefore = await okmRow('OLD-STEADY');
    const steady = await poll(t, 'OLD-STEADY', inStep);
    assert.equal(steady.statusCode, 200, steady.body);
    assert.deepEqual(steady.json(), {});
    assert.deepEqual(await okmRow('OLD-STEADY'), steadyBefore);
    const steadyPoll = await pollRow('OLD-STEADY');
    assert.ok(Number(steadyPoll?.last_sync_time) >= NOW);
    assert.equal(steadyPoll?.install_code, '123456', 'a poll without a valid code keeps the stored one');

    for (const serial of ['OLD-OVERDUE', 'OLD-NEVER', 'OLD-ACCEPTED', 'OLD-NEVER-NULL', 'OLD-STATUS']) {
      const response = await poll(t, serial, { ...inStep, kasDateTime: Date.now() });
      assert.equal(response.statusCode, 200, `${serial}: ${response.body}`);
    }
    assert.deepEqual(await eventsOf('okm.back_online'), ['OLD-OVERDUE']);
    assert.deepEqual(await eventsOf('okm.enrolled'), ['OLD-ACCEPTED', 'OLD-NEVER', 'OLD-NEVER-NULL']);
    for (const serial of ['OLD-OVERDUE', 'OLD-NEVER', 'OLD-ACCEPTED', 'OLD-NEVER-NULL']) assert.equal((await okmRow(serial)).overdue_at, null, serial);
    // The mark of the status still waiting for its fan-out stays, so that the fan-out sends the newest.
    assert.equal(Number((await pollRow('OLD-STATUS'))?.status_queued_at), POLLED_AT);

    // A record that has not polled since reads its last poll from okm_polls.
    const drifting = (await call(t, 'GET', `${OKMS}/OLD-DRIFTING`, { token: admin })).json().data;
    assert.deepEqual([drifting.last_sync_time, drifting.last_ip, drifting.last_correction, drifting.overdue], [new Date(POLLED_AT).toISOString(), '10.0.0.4', 'kasDateTime', false]);
    assert.equal((await call(t, 'GET', `${OKMS}/OLD-STEADY`, { token: admin })).json().data.acl_id, 'acl-old');

    const passNow = Date.now() + 1000;
    assert.equal(await app.fleetPass.runPass({ now: () => passNow }), true);

    // Silent for ten days: the two that have not polled since the migration.
    assert.deepEqual(await eventsOf('okm.overdue'), ['OLD-BARE', 'OLD-DRIFTING']);
    const rows = await fleetRows(db);
    const summary = (await call(t, 'GET', '/api/v1/fleet/summary', { token: admin })).json().data;
    assert.deepEqual(comparableSummary(summary), countSummary(rows, dueBefore(passNow, settings.fleetPollingInterval)));
    assert.deepEqual(summary.okms, { total: 8, in_step: 7, drifting: 1, overdue: 2, never_polled: 0, stuck: 0 });
    assert.equal(summary.pending, 2);
    assert.deepEqual(summary.firmware.kas, [
      { version: '2.1.0', okms: 1 },
      { version: '2.0.0', okms: 6 },
    ]);
    const ofAcme = (await call(t, 'GET', '/api/v1/fleet/summary?customer=acme', { token: admin })).json().data.okms;
    assert.deepEqual(ofAcme, { total: 5, in_step: 4, drifting: 1, overdue: 1, never_polled: 0, stuck: 0 });
  });
});
