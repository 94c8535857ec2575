import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase, buildTestApp, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { createTestCustomer } from '../helpers/tokens.ts';

forEachDatabase('master key rotation while a server runs', (kind) => {
  let t: TestApp;
  after(() => t?.close());

  test('a lock the running server enrols after the rotation is readable after its restart', async () => {
    t = await buildTestApp(kind);
    const env = t.database.env;
    await createTestCustomer(t, 'acme');
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    const apiKey = (await createApiKey(t.db, { customer: 'acme' })).key;
    const enrol = (app: typeof t.app, serial: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/dlock',
        headers: { authorization: `Bearer ${apiKey}` },
        payload: { serial_no: serial, type: 'door', certificate: 'acme-main', enrolment_code: '00112233445566778899', base64: false },
      });
    assert.equal((await enrol(t.app, 'LOCK-1')).statusCode, 200);
    const newKey = randomBytes(32).toString('hex');

    const rotation = await runKeyfleet({ ...env, NEW_MASTER_KEY: newKey }, 'master-key', 'rotate', '--yes');
    assert.equal(rotation.exitCode, 0, rotation.stderr);
    assert.equal((await enrol(t.app, 'LOCK-2')).statusCode, 200);

    const settings = loadSettings({ LOG_LEVEL: 'silent', ...env, ...(env.MASTER_KEY ? { MASTER_KEY: newKey } : {}) });
    const { db, dialect } = openDatabase(dialectFor(settings));
    const restarted = await buildServer({ settings, db, dialect, keyRing: createKeyRing(db, loadMasterKey(settings)) });
    try {
      for (const serial of ['LOCK-1', 'LOCK-2']) {
        const fetched = await restarted.inject({ method: 'GET', url: `/v1/dlock/${serial}`, headers: { authorization: `Bearer ${apiKey}` } });
        assert.equal(fetched.statusCode, 200, `${serial}: ${fetched.body}`);
      }
    } finally {
      await restarted.close();
      await db.destroy();
    }
  });
});

