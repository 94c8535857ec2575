import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Kysely, sql } from 'kysely';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/schema.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { createOkm, uniqueSerial } from '../okm/admin-helpers.ts';
import { poll } from './config-helpers.ts';
import { storedReportValues } from '../../src/shared/reported-values.ts';

/** A statement that writes rows (also inside a WITH): what it names after INSERT INTO, UPDATE or DELETE FROM. */
const WRITES = /\binsert\s+into\s+"?(\w+)"?|\bupdate\s+"?(\w+)"?\s+set\b|\bdelete\s+from\s+"?(\w+)"?/gi;
const tablesWritten = (statement: string) => [...statement.matchAll(WRITES)].map((match) => match[1] ?? match[2] ?? match[3]);

/**
 * The lean-poll rule (src/db/migrations/0023_lean_poll.ts): a steady poll (no subscribers, the
 * versions it reported already stored, the same answer as before) writes one row, its
 * okm_polls row, with one statement, fires no trigger and moves no secondary index entry. The
 * wide okms row is only read. The app here logs every statement it runs.
 */
forEachDatabase('a steady poll', (kind) => {
  let t: TestApp;
  let recording = false;
  const statements: string[] = [];
  before(async () => {
    const database = await createTestDatabase(kind);
    // No fleet pass, dispatcher or rollout sweep in this process: their periodic statements would land among the poll's.
    const settings = loadSettings({ LOG_LEVEL: 'silent', FLEET_PASS_INTERVAL_MS: '0', WEBHOOK_DISPATCH_IN_SERVER: 'false', ROLLOUT_SWEEP_INTERVAL_MS: '0', RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0', ...database.env });
    const dialect = dialectFor(settings);
    const db = new Kysely<Database>({
      dialect: dialect.createDialect(),
      log: (event) => {
        if (recording) statements.push(event.query.sql);
      },
    });
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    t = {
      app,
      db,
      dialect,
      settings,
      database,
      async close() {
        await app.close();
        await db.destroy();
        await database.drop();
      },
    };
  });
  after(() => t.close());

  const inStep = () => ({ kasFirmware: '2.0.0', batchKeyFirmware: '1.1', kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });
  const okmRow = (serial: string) => t.db.selectFrom('okms').selectAll().where('serial_number', '=', serial).executeTakeFirstOrThrow();
  const pollRow = (serial: string) => t.db.selectFrom('okm_polls').selectAll().where('serial_number', '=', serial).executeTakeFirstOrThrow();

  /** An OKM that has polled twice in step: its enrolment and its versions are written, its next poll is steady. */
  async function steadyOkm(): Promise<string> {
    const serial = uniqueSerial('STEADY');
    await createOkm(t, await issueTestToken(t, { scopes: ['admin'] }), serial);
    for (let round = 0; round < 2; round++) {
      const response = await poll(t, serial, inStep());
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), {});
    }
    return serial;
  }

  /** The poll, with the statements it ran. */
  async function recordedPoll(serial: string) {
    // The set-up's audit entries are chained first: the chainer, a background step of the app,
    // would otherwise write them among the poll's statements when its turn came during the poll.
    await chainAllPendingEntries(t.db);
    statements.length = 0;
    recording = true;
    try {
      const response = await poll(t, serial, inStep());
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), {});
    } finally {
      recording = false;
    }
    return statements.filter((statement) => tablesWritten(statement).length > 0);
  }

  test('runs one write statement, which writes okm_polls only, and leaves the okms row as it was', async () => {
    const serial = await steadyOkm();
    const okmBefore = await okmRow(serial);
    const pollBefore = await pollRow(serial);
    await new Promise((resolve) => setTimeout(resolve, 2));

    const writes = await recordedPoll(serial);

    assert.equal(writes.length, 1, writes.join('\n---\n'));
    assert.deepEqual(tablesWritten(writes[0]!), ['okm_polls']);
    assert.deepEqual(await okmRow(serial), okmBefore);
    const pollAfter = await pollRow(serial);
    assert.ok(pollAfter.last_sync_time > pollBefore.last_sync_time);
    assert.equal(Number(pollAfter.polls), Number(pollBefore.polls) + 1, 'the poll is counted');
    assert.deepEqual({ ...pollAfter, last_sync_time: 0, reported: '', polls: 0 }, { ...pollBefore, last_sync_time: 0, reported: '', polls: 0 });
    assert.notEqual(storedReportValues(pollAfter.reported).kasDateTime, storedReportValues(pollBefore.reported).kasDateTime);
    // No subscribers, no status mark: the status index holds no entry for it.
    assert.equal(pollAfter.status_queued_at, null);
  });

  test('on SQLite, changes one row in all (total_changes counts those of triggers too)', { skip: kind !== 'sqlite' && 'SQLite only' }, async () => {
    const serial = await steadyOkm();
    // The audit entries of the set-up are chained first: the chainer, a background step, writes on the same connection.
    await chainAllPendingEntries(t.db);
    // One connection: the app's, which these reads share.
    const totalChanges = async () => Number((await sql<{ n: number }>`SELECT total_changes() AS n`.execute(t.db)).rows[0]!.n);
    const before = await totalChanges();

    await recordedPoll(serial);

    assert.equal((await totalChanges()) - before, 1);
  });

  test('on PostgreSQL, writes no new version of the okms row, and a HOT update of its okm_polls row (no index entry)', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const serial = await steadyOkm();
    const versionOf = async (table: 'okms' | 'okm_polls') =>
      (await sql<{ xmin: string; ctid: string }>`SELECT xmin::text AS xmin, ctid::text AS ctid FROM ${sql.table(table)} WHERE serial_number = ${serial}`.execute(t.db)).rows[0]!;
    type Counts = { n_tup_ins: number; n_tup_upd: number; n_tup_hot_upd: number; n_tup_del: number };
    const countsOf = async (table: string) =>
      (await sql<Counts>`SELECT n_tup_ins::int, n_tup_upd::int, n_tup_hot_upd::int, n_tup_del::int FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ${table}`.execute(t.db)).rows[0]!;
    // A backend reports its counts when idle, at most once a second: wait until what the polls before reported has settled.
    const settled = async () => {
      let previous = '';
      return eventually(async () => {
        await new Promise((resolve) => setTimeout(resolve, 1100));
        const counts = JSON.stringify([await countsOf('okms'), await countsOf('okm_polls')]);
        const same = counts === previous;
        previous = counts;
        return same && (JSON.parse(counts) as [Counts, Counts]);
      }, 15_000);
    };
    const [, pollsBefore] = await settled();
    const okmVersion = await versionOf('okms');
    const pollVersion = await versionOf('okm_polls');

    await recordedPoll(serial);

    assert.deepEqual(await versionOf('okms'), okmVersion);
    assert.notEqual((await versionOf('okm_polls')).xmin, pollVersion.xmin);
    await eventually(async () => (await countsOf('okm_polls')).n_tup_upd > pollsBefore.n_tup_upd, 10_000, 'the poll counted');
    const [, pollsAfter] = await settled();
    // The statistics are the table's, and a backend of the pool may report the setup's writes
    // late (up to 10 s after it went idle): what holds whatever else they include is that every
    // update of okm_polls since was a HOT one, and that nothing was inserted or deleted there.
    assert.ok(pollsAfter.n_tup_upd > pollsBefore.n_tup_upd);
    assert.equal(pollsAfter.n_tup_hot_upd - pollsBefore.n_tup_hot_upd, pollsAfter.n_tup_upd - pollsBefore.n_tup_upd, JSON.stringify({ pollsBefore, pollsAfter }));
    assert.equal(pollsAfter.n_tup_del, pollsBefore.n_tup_del);
  });

  test('a poll that is not steady is seen writing okms: new versions are written there', async () => {
    const serial = await steadyOkm();

    statements.length = 0;
    recording = true;
    try {
      await poll(t, serial, { ...inStep(), kasFirmware: '2.0.1' });
    } finally {
      recording = false;
    }

    const written = statements.flatMap(tablesWritten);
    assert.ok(written.includes('okms'), written.join());
    assert.equal((await okmRow(serial)).firmware_version, '2.0.1');
  });
});
