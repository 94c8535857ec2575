import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { loadMasterKey, masterKeyFingerprint } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { rotateKeys } from '../../src/secrets/rotate-master-key.ts';
import { forEachDatabase, buildTestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { cliChangeSource } from '../../src/cli/context.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { serveProcess } from '../helpers/server-process.ts';

forEachDatabase('a wrong master key', (kind) => {
  test('commands run with another master key are refused, name the key the database expects, and change nothing', async () => {
    const t = await buildTestApp(kind);
    try {
      await createTestCustomer(t, 'acme');
      await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
      const wrongEnv = { ...t.database.env, MASTER_KEY: randomBytes(32).toString('hex') };

      const runs = await Promise.all([
        runKeyfleet(wrongEnv, 'cert', 'create', '--customer', 'acme', '--name', 'acme-other'),
        runKeyfleet(wrongEnv, 'customer', 'create', 'globex'),
        runKeyfleet(wrongEnv, 'migrate'),
      ]);

      for (const run of runs) {
        assert.equal(run.exitCode, 1);
        assert.match(run.stderr, new RegExp(`database expects master key ${t.app.keyRing.fingerprint}, MASTER_KEY is [0-9a-f]{16}`));
      }
      assert.equal((await t.db.selectFrom('intermediate_certificates').select('name').where('name', '=', 'acme-other').execute()).length, 0);
      assert.equal((await t.db.selectFrom('customers').select('name').where('name', '=', 'globex').execute()).length, 0);
    } finally {
      await t.close();
    }
  });

  test('serve with another master key does not start, and says which key the database expects', async () => {
    const t = await buildTestApp(kind);
    try {
      const server = serveProcess({ ...t.database.env, MASTER_KEY: randomBytes(32).toString('hex') });

      const exitCode = await server.exited;

      assert.equal(exitCode, 1);
      assert.match(server.output(), new RegExp(`database expects master key ${t.app.keyRing.fingerprint}, MASTER_KEY is [0-9a-f]{16}`));
    } finally {
      await t.close();
    }
  });

  test('/readyz is 503 once another process has changed the master key, naming both keys', async () => {
    const t = await buildTestApp(kind);
    try {
      assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
      const newKey = randomBytes(32);
      await rotateKeys(t.db, createKeyRing(t.db, loadMasterKey(t.settings)), cliChangeSource(), { newMasterKey: { key: newKey, source: 'NEW_MASTER_KEY' } });

      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });

      assert.equal(ready.statusCode, 503);
      assert.match(ready.json().error_msg, new RegExp(`database expects master key ${masterKeyFingerprint(newKey)}, .* is ${t.app.keyRing.fingerprint}`));
    } finally {
      await t.close();
    }
  });
});

