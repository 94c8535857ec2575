import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

interface SecretOutput {
  customer: string | null;
  secret: string;
  previous_secret: string | null;
  previous_valid_until: string | null;
}

forEachDatabase('keyfleet webhook secret commands', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
    const created = await runKeyfleet(store.database.env, 'customer', 'create', 'acme');
    assert.equal(created.exitCode, 0, created.stderr);
  });
  after(() => store.close());

  const secret = async (...args: string[]): Promise<SecretOutput> => {
    const run = await runKeyfleet(store.database.env, 'webhook', 'secret', ...args, '--json');
    assert.equal(run.exitCode, 0, run.stderr);
    return JSON.parse(run.stdout) as SecretOutput;
  };

  test("show prints the customer's whsec_ secret, the same each time, distinct from the deployment secret", async () => {
    const first = await secret('show', '--customer', 'acme');
    const second = await secret('show', '--customer', 'acme');
    const deployment = await secret('show');

    assert.match(first.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(second, first);
    assert.equal(deployment.customer, null);
    assert.notEqual(deployment.secret, first.secret);
  });

  test('rotate makes a new secret and keeps the old one signing for the overlap (24 h unless told)', async () => {
    const before = await secret('show', '--customer', 'acme');

    const started = Date.now();
    const rotated = await secret('rotate', '--customer', 'acme');
    const shown = await secret('show', '--customer', 'acme');

    assert.notEqual(rotated.secret, before.secret);
    assert.equal(rotated.previous_secret, before.secret);
    const overlap = Date.parse(rotated.previous_valid_until!) - started;
    assert.ok(overlap > 23.9 * 3_600_000 && overlap <= 24 * 3_600_000 + 60_000, `overlap ${overlap} ms`);
    assert.deepEqual(shown, rotated);
  });

  test('rotate --overlap 0s drops the old secret at once', async () => {
    const rotated = await secret('rotate', '--customer', 'acme', '--overlap', '0s');

    assert.equal(rotated.previous_secret, null);
    assert.equal(rotated.previous_valid_until, null);
  });

  test('an unknown customer is a one-line error and exit 3 (not found), a bad overlap exit 2 (usage)', async () => {
    const unknown = await runKeyfleet(store.database.env, 'webhook', 'secret', 'show', '--customer', 'nobody');
    const badOverlap = await runKeyfleet(store.database.env, 'webhook', 'secret', 'rotate', '--overlap', 'soon');

    assert.equal(unknown.exitCode, 3);
    assert.equal(unknown.stderr, 'keyfleet: customer nobody does not exist\n');
    assert.equal(badOverlap.exitCode, 2);
    assert.match(badOverlap.stderr, /^keyfleet: --overlap: expected a duration/);
  });
});
