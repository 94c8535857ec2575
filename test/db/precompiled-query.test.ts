import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { precompiledQuery } from '../../src/db/precompiled-query.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

// audit_event_cursor is a one-row table of (id, seq) nothing else in these tests touches beyond row 1.
const insertCursor = precompiledQuery<{ id: number }, [number, number]>(2, (db, [id, seq]) =>
  db.insertInto('audit_event_cursor').values({ id: id as number, seq: seq as number }).returning('id'),
);
const insertCursorQuietly = precompiledQuery<never, [number, number]>(2, (db, [id, seq]) => db.insertInto('audit_event_cursor').values({ id: id as number, seq: seq as number }));
const setSeq = precompiledQuery<never, [number, number]>(2, (db, [id, seq]) => db.updateTable('audit_event_cursor').set({ seq: seq as number }).where('id', '>=', id as number));
const readSeqs = precompiledQuery<{ id: number; seq: number }, [number]>(1, (db, [id]) =>
  db.selectFrom('audit_event_cursor').select(['id', 'seq']).where('id', '>=', id as number).orderBy('id'),
);

forEachDatabase('precompiled queries', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  /** The executor calls a transaction makes through Kysely's own path while `act` runs. */
  async function executorCallsIn(act: (trx: Db) => Promise<void>): Promise<number> {
    let calls = 0;
    await t.db.transaction().execute(async (trx) => {
      // The transaction's one executor, which its query builders and db.executeQuery both call.
      const executor = trx.getExecutor();
      const executeQuery = executor.executeQuery.bind(executor);
      executor.executeQuery = ((...args: Parameters<typeof executeQuery>) => {
        calls += 1;
        return executeQuery(...args);
      }) as typeof executeQuery;
      await act(trx);
    });
    return calls;
  }

  test('inside a transaction a precompiled query answers as through Kysely: rows, changed rows and the inserted row id', async () => {
    await t.db.transaction().execute(async (trx) => {
      assert.deepEqual((await insertCursor(trx, 100, 7)).rows, [{ id: 100 }]);
      const quiet = await insertCursorQuietly(trx, 101, 8);
      assert.deepEqual(quiet.rows, []);
      assert.equal(quiet.numAffectedRows, 1n);
      if (kind === 'sqlite') assert.equal(quiet.insertId, 101n);
      assert.equal((await setSeq(trx, 100, 9)).numAffectedRows, 2n);
      assert.deepEqual((await readSeqs(trx, 100)).rows.map((row) => ({ id: Number(row.id), seq: Number(row.seq) })), [
        { id: 100, seq: 9 },
        { id: 101, seq: 9 },
      ]);
      await trx.deleteFrom('audit_event_cursor').where('id', '>=', 100).execute();
    });
  });

  test("a precompiled query's rows are the objects Kysely's own query gives: the same columns in the same order, the same values", async () => {
    const columns = (db: Db, id: unknown) =>
      db
        .selectFrom('audit_event_cursor')
        .select((eb) => ['id', 'seq', eb.lit(null).as('nothing'), sql<string>`'text'`.as('word'), eb.ref('seq').as('seq_again'), sql<number>`${eb.ref('seq')} * 1000000000`.as('large')])
        .where('id', '>=', id as number)
        .orderBy('id');
    const readColumns = precompiledQuery<Record<string, unknown>, [number]>(1, (db, [id]) => columns(db, id));
    await t.db.insertInto('audit_event_cursor').values([{ id: 300, seq: 7 }, { id: 301, seq: 8 }]).execute();
    try {
      const expected = await columns(t.db, 300).execute();

      for (const rows of [(await readColumns(t.db, 300)).rows, (await readColumns(t.db, 300)).rows]) {
        assert.deepEqual(rows, expected);
        assert.deepEqual(rows.map((row) => Object.keys(row)), expected.map((row) => Object.keys(row)));
        assert.ok(rows.every((row) => Object.getPrototypeOf(row) === Object.prototype));
      }
      assert.equal(expected.length, 2);
    } finally {
      await t.db.deleteFrom('audit_event_cursor').where('id', '>=', 300).execute();
    }
  });

  test('a precompiled query that fails inside a transaction rejects it, and what the transaction wrote before is rolled back', async () => {
    await insertCursor(t.db, 200, 1);
    await assert.rejects(
      t.db.transaction().execute(async (trx) => {
        await insertCursor(trx, 201, 1);
        await insertCursor(trx, 200, 1);
      }),
    );
    assert.deepEqual((await readSeqs(t.db, 200)).rows.map((row) => Number(row.id)), [200]);
    await t.db.deleteFrom('audit_event_cursor').where('id', '>=', 200).execute();
  });

  test(
    kind === 'sqlite'
      ? "on SQLite a transaction's precompiled queries run on the connection directly, past Kysely's executor; other queries go through it"
      : "on PostgreSQL every query of a transaction goes through Kysely's executor",
    async () => {
      const calls = await executorCallsIn(async (trx) => {
        await readSeqs(trx, 1);
        await trx.selectFrom('audit_event_cursor').select('seq').execute();
      });
      assert.equal(calls, kind === 'sqlite' ? 1 : 2);
    },
  );
});
