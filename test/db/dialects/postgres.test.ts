import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { pollStatementsFor } from '../../../src/device/poll-batch-repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../../helpers/app.ts';

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
});
