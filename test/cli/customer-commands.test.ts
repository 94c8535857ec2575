import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { findRetryPolicies } from '../../src/customers/repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

forEachDatabase('keyfleet customer update --firmware-retry-policy', (kind) => {
  let store: TestStore;
  let acme: number;
  before(async () => {
    store = await openTestStore(kind);
    const created = await runKeyfleet(store.database.env, 'customer', 'create', 'acme', '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    acme = (await store.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id;
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);

  test('sets the customer\'s policy, completed with the defaults, and "default" gives it back to the fleet\'s', async () => {
    const set = await keyfleet('customer', 'update', 'acme', '--firmware-retry-policy', '{"offers": 2, "backoff_polls": [5]}', '--json');

    assert.equal(set.exitCode, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { name: 'acme', firmware_retry_policy: { offers: 2, backoff_polls: [5], max_backoff_polls: 32 } });
    assert.deepEqual((await findRetryPolicies(store.db, [acme])).get(acme), { offers: 2, backoffPolls: [5], maxBackoffPolls: 32 });

    const reset = await keyfleet('customer', 'update', 'acme', '--firmware-retry-policy', 'default');
    assert.deepEqual([reset.exitCode, reset.stdout], [0, 'name: acme\nfirmware_retry_policy: default\n']);
    assert.equal((await findRetryPolicies(store.db, [acme])).has(acme), false);
  });

  test('a bad policy is a usage error (exit 2) naming the field; no option at all too', async () => {
    const cases: [string[], string][] = [
      [['--firmware-retry-policy', '{"offers": -1}'], 'keyfleet: --firmware-retry-policy: offers: must be >= 0\n'],
      [['--firmware-retry-policy', '{"offers": 3, "backoff_polls": []}'], 'keyfleet: --firmware-retry-policy: backoff_polls: must not have fewer than 1 items\n'],
      [['--firmware-retry-policy', '{"offers": 3, "tries": 1}'], 'keyfleet: --firmware-retry-policy: tries: not a field of the policy\n'],
      [['--firmware-retry-policy', 'three'], 'keyfleet: --firmware-retry-policy: expected a JSON object such as {"offers": 3, "backoff_polls": [1, 2, 4, 8], "max_backoff_polls": 32}\n'],
      [[], 'keyfleet: expected --time-zone or --firmware-retry-policy\n'],
    ];
    for (const [options, message] of cases) {
      const run = await keyfleet('customer', 'update', 'acme', ...options);
      assert.deepEqual([run.exitCode, run.stderr], [2, message], options.join(' '));
    }
  });

  test('an unknown customer is exit 3 (not found)', async () => {
    assert.equal((await keyfleet('customer', 'update', 'nobody', '--firmware-retry-policy', '{"offers": 0}')).exitCode, 3);
  });
});
