import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { isDatabaseUnavailable } from '../../../src/db/connection-errors.ts';
import { dialectFor, openDatabase } from '../../../src/db/database.ts';
import { connectionSettings, QUERY_TIMEOUT_MS } from '../../../src/db/dialects/postgres.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { precompiledQuery } from '../../../src/db/precompiled-query.ts';
import { pollStatementsFor } from '../../../src/device/poll-batch-repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../../helpers/app.ts';

test('DATABASE_URL is read as node-postgres reads it, except its query_timeout, which is the read timeout keyfleet applies itself', () => {
  const asked = connectionSettings('postgres://keyfleet:secret@db.example.com:6432/fleet?query_timeout=605000&statement_timeout=600000&application_name=migration');
  assert.equal(asked.readTimeoutMs, 605_000);
  assert.deepEqual(asked.fromUrl, {
    user: 'keyfleet',
    password: 'secret',
    host: 'db.example.com',
    port: '6432',
    database: 'fleet',
    statement_timeout: '600000',
    application_name: 'migration',
  });

  const plain = connectionSettings('postgres://root@127.0.0.1:5432/keyfleet');
  assert.equal(plain.readTimeoutMs, QUERY_TIMEOUT_MS);
  assert.equal('query_timeout' in plain.fromUrl, false);
});

forEachDatabase('the PostgreSQL connections keyfleet opens', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
  });
  after(() => store.close());

  test('run without JIT compilation, whose cost exceeds that of the short statements it would compile', { skip: kind !== 'postgres' && 'SQLite has no JIT' }, async () => {
    const setting = await sql<{ jit: string }>`show jit`.execute(store.db);

    assert.equal(setting.rows[0]?.jit, 'off');
  });

  test('run the precompiled queries on generic plans: a batch of one poll is not planned again at each execution', { skip: kind !== 'postgres' && 'SQLite plans each statement once' }, async () => {
    await migrateToLatest(store.db, store.dialect);
    const statements = pollStatementsFor(store.dialect);
    const poll = (serialNumber: string) => ({
      serialNumber,
      observation: { now: 1000, ip: '192.0.2.1', firmwareVersion: null, batchKeyFirmwareVersion: null, wirelessKeyFirmwareVersion: null, reported: '{}', installCode: null },
    });

    const plans = await store.db.connection().execute(async (connection) => {
      // Past the five executions after which PostgreSQL, left to choose, weighs a generic plan.
      for (let batch = 0; batch < 8; batch++) await connection.transaction().execute((tx) => statements.recordPolls(tx, [poll(`PLAN-${batch}`)]));
      return sql<{ generic_plans: number; custom_plans: number }>`
        select generic_plans, custom_plans from pg_prepared_statements where statement like ${'with "known"%'}`.execute(connection);
    });

    assert.deepEqual(plans.rows, [{ generic_plans: 8, custom_plans: 0 }]);
  });

  test(
    'a precompiled query that a new connection describes with other columns (its table altered while keyfleet serves) answers with those columns',
    { skip: kind !== 'postgres' && 'SQLite prepares its statements in-process' },
    async () => {
      const readShape = precompiledQuery<Record<string, unknown>, [number]>(1, (db, [id]) =>
        (db as unknown as Kysely<{ row_shape: { id: number; a: string } }>).selectFrom('row_shape').selectAll().where('id', '>=', id as number),
      );
      await sql`create table row_shape (id bigint primary key, a text)`.execute(store.db);
      await sql`insert into row_shape values (1, 'x')`.execute(store.db);
      assert.deepEqual((await readShape(store.db, 0)).rows, [{ id: 1, a: 'x' }]);

      await sql`alter table row_shape add column b text default 'y'`.execute(store.db);
      const { db } = openDatabase(dialectFor(store.settings));
      try {
        const { rows } = await readShape(db, 0);

        assert.deepEqual(rows, [{ id: 1, a: 'x', b: 'y' }]);
        assert.deepEqual(Object.keys(rows[0]!), ['id', 'a', 'b']);
      } finally {
        await db.destroy();
      }
    },
  );

  test(
    'a statement the server has not answered within the read timeout fails as an unavailable database, and its connection is closed, not reused',
    { skip: kind !== 'postgres' && 'SQLite is in-process' },
    async () => {
      const url = new URL(store.settings.databaseUrl!);
      url.searchParams.set('query_timeout', '300');
      const { db, dialect } = openDatabase(dialectFor({ ...store.settings, databaseUrl: url.href }));
      try {
        const [{ pid }] = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows as [{ pid: number }];
        const started = Date.now();
        const failure = await db.connection().execute((connection) => sql`select pg_sleep(2)`.execute(connection)).then(
          () => assert.fail('the statement was answered'),
          (error: unknown) => error,
        );
        const elapsed = Date.now() - started;

        assert.match(String(failure), /Query read timeout/);
        assert.ok(isDatabaseUnavailable(failure));
        assert.ok(elapsed >= 290 && elapsed < 1_500, `failed after ${elapsed} ms`);
        assert.deepEqual(dialect.poolState(), { total: 0, idle: 0, waiting: 0 });
        const next = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db);
        assert.notEqual(next.rows[0]?.pid, pid);
      } finally {
        await db.destroy();
      }
    },
  );
});
