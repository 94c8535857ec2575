import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachDatabase } from '../../helpers/app.ts';
import { runKeyfleet } from '../../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/databases.ts';

/** Commands started at once, as an operator's scripts or a test fixture start them beside a server. */
const AT_ONCE = 6;
const WAVES = 2;

forEachDatabase('several keyfleet processes writing one database at once', (kind) => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase(kind);
    const created = await runKeyfleet(database.env, 'customer', 'create', 'acme');
    assert.equal(created.exitCode, 0, created.stderr);
  });
  after(async () => {
    await database.drop();
  });

  // SQLite: a transaction that read before it wrote, begun deferred, was refused at once
  // ("database is locked") when another process had committed meanwhile; SQLite does not wait
  // (busy_timeout) in that case. Transactions now take the write lock as they begin, and wait.
  test('commands that write the same tables at the same time all succeed, none "database is locked"', async () => {
    const failures: string[] = [];
    for (let wave = 0; wave < WAVES; wave += 1) {
      const runs = await Promise.all(Array.from({ length: AT_ONCE }, () => runKeyfleet(database.env, 'apikey', 'create', '--customer', 'acme', '--json')));
      failures.push(...runs.filter((run) => run.exitCode !== 0).map((run) => run.stderr.trim()));
    }
    const listed = await runKeyfleet(database.env, 'apikey', 'list', '--customer', 'acme', '--json');

    assert.deepEqual(failures, []);
    assert.equal(listed.exitCode, 0, listed.stderr);
    assert.equal((JSON.parse(listed.stdout) as { keys: unknown[] }).keys.length, AT_ONCE * WAVES);
  });
});
