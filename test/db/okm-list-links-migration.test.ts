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
import { issueTestToken } from '../helpers/tokens.ts';
import { call, OKMS } from '../okm/admin-helpers.ts';

const FIRST_NEW = '0026_okm_subscriber_urls';
const names = Object.keys(MIGRATIONS);
const BEFORE = names.slice(0, names.indexOf(FIRST_NEW));
const FROM = names.slice(names.indexOf(FIRST_NEW));

const HOUR = 3_600_000;
const STARTED_AT = Date.now() - 5 * HOUR;

/** An okms row as the schema before 0026 had it. */
const oldOkm = (serial: string, customerId: number | null, statusUrls: string) => ({
  serial_number: serial,
  customer_id: customerId,
  auditing_enabled: 0,
  status_urls: statusUrls,
  created_at: 1,
  updated_at: 1,
});

/**
 * Upgrades a database holding OKMs with subscribers and rollouts at each stage, built by the
 * migrations before 0026 and filled as the versions before wrote it, on both databases.
 */
forEachDatabase('migrations 0026 and 0027: the subscriber URL table and group start times, back-filled', (kind) => {
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

  test('every stored status URL becomes a row of okm_subscriber_urls, each started group of a rollout gets a start time, and the app lists by them', async () => {
    const context: MigrationContext = { kind };
    for (const name of BEFORE) await MIGRATIONS[name]!.up(old, context);
    const { id } = await old.insertInto('customers').values({ name: 'acme', created_at: 1 }).returning('id').executeTakeFirstOrThrow();
    const acme = Number(id);
    // More OKMs than one back-fill chunk, so that the back-fill's paging is exercised.
    const many = Array.from({ length: 1_203 }, (_, index) => oldOkm(`MANY-${String(index).padStart(5, '0')}`, acme, index % 2 === 0 ? '["https://hooks.example/many"]' : '[]'));
    for (let start = 0; start < many.length; start += 500) await old.insertInto('okms').values(many.slice(start, start + 500)).execute();
    await old
      .insertInto('okms')
      .values([
        oldOkm('OLD-TWO', acme, '["https://hooks.example/a","https://hooks.example/b?x=1&y=%C3%A9"]'),
        oldOkm('OLD-ONE', acme, '["https://hooks.example/a"]'),
        oldOkm('OLD-NONE', acme, '[]'),
        oldOkm('OLD-UNASSIGNED', null, '["https://hooks.example/a"]'),
      ])
      .execute();
    const rollout = (state: string, currentGroup: number, startedAt: number | null) => ({
      customer_id: acme,
      kind: 'kas',
      version: '2.0',
      group_percents: '[10,50,100]',
      success_threshold: 95,
      error_threshold: 5,
      update_timeout_ms: HOUR,
      auto_advance: 1,
      state,
      current_group: currentGroup,
      approval_required: 0,
      created_by: 'alice',
      created_at: 1,
      updated_at: 1,
      started_at: startedAt,
    });
    const ids: number[] = [];
    for (const values of [rollout('ready', -1, null), rollout('running', 0, STARTED_AT), rollout('paused', 2, STARTED_AT), rollout('aborted', 1, STARTED_AT)]) {
      ids.push(Number((await old.insertInto('rollouts').values(values).returning('id').executeTakeFirstOrThrow()).id));
    }

    for (const name of FROM) await MIGRATIONS[name]!.up(old, context);

    const rows = await old.selectFrom('okm_subscriber_urls').select(['serial_number', 'url']).where('serial_number', 'like', 'OLD-%').orderBy('serial_number').orderBy('url').execute();
    assert.deepEqual(rows, [
      { serial_number: 'OLD-ONE', url: 'https://hooks.example/a' },
      { serial_number: 'OLD-TWO', url: 'https://hooks.example/a' },
      { serial_number: 'OLD-TWO', url: 'https://hooks.example/b?x=1&y=%C3%A9' },
      { serial_number: 'OLD-UNASSIGNED', url: 'https://hooks.example/a' },
    ]);
    const manyRows = await old.selectFrom('okm_subscriber_urls').select((eb) => eb.fn.countAll().as('n')).where('url', '=', 'https://hooks.example/many').executeTakeFirstOrThrow();
    assert.equal(Number(manyRows.n), 602);
    const starts = await old.selectFrom('rollouts').select(['id', 'group_started_at']).orderBy('id').execute();
    // Before 0027 only the rollout's start was recorded: each started group is taken to have started then (fewer silent OKMs, never more).
    assert.deepEqual(
      starts.map((row) => (row.group_started_at === null ? null : JSON.parse(row.group_started_at))),
      [null, [STARTED_AT], [STARTED_AT, STARTED_AT, STARTED_AT], [STARTED_AT, STARTED_AT]],
    );

    const settings = loadSettings({ LOG_LEVEL: 'silent', FLEET_PASS_INTERVAL_MS: '0', ROLLOUT_SWEEP_INTERVAL_MS: '0', ...database.env });
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    try {
      const t = { app, db, dialect, settings, database, close: async () => {} };
      const admin = await issueTestToken(t, { scopes: ['admin'] });
      const acmeToken = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
      const listed = async (token: string, url: string) => (await call(t, 'GET', `${OKMS}?subscriber_url=${encodeURIComponent(url)}`, { token })).json().data.map((okm: { serial_number: string }) => okm.serial_number);
      assert.deepEqual(await listed(acmeToken, 'https://hooks.example/a'), ['OLD-ONE', 'OLD-TWO']);
      assert.deepEqual(await listed(admin, 'https://hooks.example/a'), ['OLD-ONE', 'OLD-TWO', 'OLD-UNASSIGNED']);
      // The admin write path keeps the table from then on.
      await call(t, 'PATCH', `${OKMS}/OLD-TWO`, { token: acmeToken, payload: { subscribe_urls: { status: ['https://hooks.example/b?x=1&y=%C3%A9'] } } });
      assert.deepEqual(await listed(acmeToken, 'https://hooks.example/a'), ['OLD-ONE']);
      const running = await call(t, 'GET', `/api/v1/rollouts/${ids[1]}/okms`, { token: admin });
      assert.equal(running.statusCode, 200, running.body);
    } finally {
      await app.close();
    }
  });
});
