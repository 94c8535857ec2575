import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { MIGRATIONS } from '../../src/db/migrate.ts';
import type { DialectStrategy } from '../../src/db/dialects/strategy.ts';
import type { AnyDb, MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { poll } from '../device/config-helpers.ts';

const FIRST_NEW = '0028_stuck_okms';
const names = Object.keys(MIGRATIONS);
const BEFORE = names.slice(0, names.indexOf(FIRST_NEW));
const FROM = names.slice(names.indexOf(FIRST_NEW));

/** An okms row as the schema before 0028 had it: polled, its last poll answered with `lastCorrection`. */
const oldOkm = (serial: string, customerId: number | null, lastCorrection: string | null) => ({
  serial_number: serial,
  customer_id: customerId,
  auditing_enabled: 0,
  status_urls: '[]',
  last_correction: lastCorrection,
  overdue_at: null,
  created_at: 1,
  updated_at: 1,
});

/**
 * Upgrades a database holding polled OKMs (in step and drifting), a customer and a rollout,
 * built by the migrations before 0028 and filled as the versions before wrote it.
 */
forEachDatabase('migration 0028_stuck_okms: polls counted from the upgrade on', (kind) => {
  let database: TestDatabase;
  let db: Db;
  let dialect: DialectStrategy;
  let old: AnyDb;
  before(async () => {
    database = await createTestDatabase(kind);
    ({ db, dialect } = openDatabase(dialectFor(loadSettings({ LOG_LEVEL: 'silent', ...database.env }))));
    old = db as unknown as AnyDb;
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  test('old rows have no record, no policy and a poll count of 0; the app then counts polls and finds a drifting OKM stuck on its third poll', async () => {
    const context: MigrationContext = { kind };
    for (const name of BEFORE) await MIGRATIONS[name]!.up(old, context);
    const { id } = await old.insertInto('customers').values({ name: 'acme', created_at: 1 }).returning('id').executeTakeFirstOrThrow();
    await old.insertInto('okms').values([oldOkm('OLD-STEP', Number(id), null), oldOkm('OLD-DRIFT', Number(id), 'pollingInterval')]).execute();
    await old
      .insertInto('okm_polls')
      .values(['OLD-STEP', 'OLD-DRIFT'].map((serial) => ({ serial_number: serial, last_sync_time: Date.now() - 1000, last_ip: '10.0.0.1', reported: '{}', install_code: null, status_queued_at: null })))
      .execute();

    for (const name of FROM) await MIGRATIONS[name]!.up(old, context);

    assert.deepEqual(
      (await old.selectFrom('okm_polls').select(['serial_number', 'polls']).orderBy('serial_number').execute()).map((row) => ({ ...row, polls: Number(row.polls) })),
      [
        { serial_number: 'OLD-DRIFT', polls: 0 },
        { serial_number: 'OLD-STEP', polls: 0 },
      ],
    );
    const record = await old
      .selectFrom('okms')
      .select(['serial_number', 'last_correction', 'correction_digest', 'correction_since_poll', 'offer_hold', 'stuck_resolver', 'stuck_since'])
      .orderBy('serial_number')
      .execute();
    assert.deepEqual(record, [
      { serial_number: 'OLD-DRIFT', last_correction: 'pollingInterval', correction_digest: null, correction_since_poll: null, offer_hold: null, stuck_resolver: null, stuck_since: null },
      { serial_number: 'OLD-STEP', last_correction: null, correction_digest: null, correction_since_poll: null, offer_hold: null, stuck_resolver: null, stuck_since: null },
    ]);
    assert.deepEqual(await old.selectFrom('customers').select('firmware_retry_policy').execute(), [{ firmware_retry_policy: null }]);

    const settings = loadSettings({ LOG_LEVEL: 'silent', FLEET_PASS_INTERVAL_MS: '0', ROLLOUT_SWEEP_INTERVAL_MS: '0', WEBHOOK_DISPATCH_IN_SERVER: 'false', ...database.env });
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    try {
      const t = { app, db, dialect, settings, database, close: async () => {} };
      const inStep = { kasDateTime: Date.now(), cacheMode: 1, auditUrl: settings.auditUrl, pollingInterval: settings.fleetPollingInterval };
      assert.deepEqual((await poll(t, 'OLD-STEP', inStep)).json(), {});
      const drifting = { ...inStep, pollingInterval: 300 };
      for (let round = 0; round < 3; round++) assert.deepEqual((await poll(t, 'OLD-DRIFT', drifting)).json(), { pollingInterval: settings.fleetPollingInterval });

      const after = await db.selectFrom('okms').select(['serial_number', 'correction_since_poll', 'stuck_resolver']).orderBy('serial_number').execute();
      // The drifting OKM's run starts at its first counted poll (its digest was unknown before): stuck on the third.
      assert.deepEqual(
        after.map((row) => ({ ...row, correction_since_poll: row.correction_since_poll === null ? null : Number(row.correction_since_poll) })),
        [
          { serial_number: 'OLD-DRIFT', correction_since_poll: 1, stuck_resolver: 'pollingInterval' },
          { serial_number: 'OLD-STEP', correction_since_poll: null, stuck_resolver: null },
        ],
      );
      assert.deepEqual(
        (await db.selectFrom('okm_polls').select(['serial_number', 'polls']).orderBy('serial_number').execute()).map((row) => Number(row.polls)),
        [3, 1],
      );
    } finally {
      await app.close();
    }
  });
});
