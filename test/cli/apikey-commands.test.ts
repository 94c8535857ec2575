import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { checkApiKey } from '../../src/dlock/api-keys.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';


forEachDatabase('keyfleet apikey commands', (kind) => {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await createTestDatabase(kind);
    const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
    const handle = openDatabase(dialectFor(settings));
    db = handle.db;
    await migrateToLatest(db, handle.dialect);
    await createCustomer(db, 'acme');
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  const keyfleet = (...args: string[]) => runKeyfleet(database.env, ...args);

  test('apikey create --json prints a working key once, and apikey revoke makes it fail', async () => {
    const created = await keyfleet('apikey', 'create', '--customer', 'acme', '--label', 'mobile app', '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    const { id, key, customer, label } = JSON.parse(created.stdout) as { id: string; key: string; customer: string; label: string };
    const beforeRevoke = await checkApiKey(db, key);

    const revoked = await keyfleet('apikey', 'revoke', id, '--json');

    assert.equal(customer, 'acme');
    assert.equal(label, 'mobile app');
    assert.ok(beforeRevoke.ok);
    assert.equal(beforeRevoke.owner.keyId, id);
    assert.equal(beforeRevoke.owner.customer, 'acme');
    assert.equal(revoked.exitCode, 0, revoked.stderr);
    assert.equal((JSON.parse(revoked.stdout) as { id: string }).id, id);
    assert.deepEqual(await checkApiKey(db, key), { ok: false, reason: 'invalid' });
  });

  test('apikey commands fail with one line on stderr for an unknown customer or key id', async () => {
    const unknownCustomer = await keyfleet('apikey', 'create', '--customer', 'nobody');
    const unknownId = await keyfleet('apikey', 'revoke', '0123456789abcdef');

    assert.notEqual(unknownCustomer.exitCode, 0);
    assert.equal(unknownCustomer.stderr, 'keyfleet: customer: unknown customer nobody\n');
    assert.notEqual(unknownId.exitCode, 0);
    assert.equal(unknownId.stderr, 'keyfleet: API key 0123456789abcdef not found\n');
  });
});
