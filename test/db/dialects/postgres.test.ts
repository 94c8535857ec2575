import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
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
});
