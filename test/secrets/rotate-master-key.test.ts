import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { checkApiKey, createApiKey } from '../../src/dlock/api-keys.ts';
import { ensureDeploymentSecret } from '../../src/dlock/key-certificate.ts';
import { findApiKeyWithLock, lockCertificate } from '../../src/dlock/locks.ts';
import { createIntermediate, loadIntermediatePrivateKey } from '../../src/pki/intermediates.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { SEALED_COLUMNS, rotateMasterKey } from '../../src/secrets/rotate-master-key.ts';
import { DEPLOYMENT_OWNER, rotateWebhookSecret, webhookSecrets } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, openTestStore, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestCustomer } from '../helpers/tokens.ts';

forEachDatabase('master key rotation', (kind) => {
  let t: TestApp;
  let lockKey: string;
  let apiKey: string;
  before(async () => {
    t = await buildTestApp(kind);
    await createTestCustomer(t, 'acme');
    await createIntermediate(t.db, t.app.masterKey, t.settings, { customer: 'acme', name: 'acme-main' });
    apiKey = (await createApiKey(t.db, { customer: 'acme' })).key;
    const enrolled = await t.app.inject({
      method: 'POST',
      url: '/v1/dlock',
      headers: { authorization: `Bearer ${apiKey}` },
      payload: { serial_no: 'ROTATE-1', type: 'door', certificate: 'acme-main', enrolment_code: '00112233445566778899', base64: false },
    });
    lockKey = enrolled.json().data.key.key;
  });
  after(() => t.close());

  test('every column named *_sealed in the schema is in SEALED_COLUMNS', async () => {
    // PostgreSQL lists the tables of every schema: only this database's count.
    const schema = await t.dialect.migrationTableSchema(t.db as never);
    const sealedInSchema = (await t.db.introspection.getTables())
      .filter((table) => table.schema === schema)
      .flatMap((table) => table.columns.filter((column) => column.name.endsWith('_sealed')).map((column) => `${table.name}.${column.name}`))
      .sort();

    assert.deepEqual(SEALED_COLUMNS.map((sealed) => `${sealed.table}.${sealed.column}`).sort(), sealedInSchema);
  });

  test('after a rotation every private key and secret opens with the new key, unchanged, and none with the old', async () => {
    const oldKey = t.app.masterKey;
    const newKey = randomBytes(32);
    const before = {
      root: (await loadRootPrivateKey(t.db, oldKey)).privateKey.export({ format: 'pem', type: 'pkcs8' }),
      intermediate: (await loadIntermediatePrivateKey(t.db, oldKey, 'acme-main')).export({ format: 'pem', type: 'pkcs8' }),
      signingKid: (await loadActiveSigningKey(t.db, oldKey)).kid,
      deploymentSecret: await ensureDeploymentSecret(t.db, oldKey),
      webhookSecrets: await rotateWebhookSecret(t.db, oldKey, DEPLOYMENT_OWNER, Date.now(), 3_600_000),
    };

    const resealed = await rotateMasterKey(t.db, oldKey, newKey);

    assert.equal(resealed['dlocks.key_sealed'], 1);
    assert.equal(resealed['pki_root.private_key_sealed'], 1);
    assert.deepEqual((await loadRootPrivateKey(t.db, newKey)).privateKey.export({ format: 'pem', type: 'pkcs8' }), before.root);
    assert.deepEqual((await loadIntermediatePrivateKey(t.db, newKey, 'acme-main')).export({ format: 'pem', type: 'pkcs8' }), before.intermediate);
    assert.equal((await loadActiveSigningKey(t.db, newKey)).kid, before.signingKid);
    assert.deepEqual(await ensureDeploymentSecret(t.db, newKey), before.deploymentSecret);
    assert.deepEqual(await webhookSecrets(t.db, newKey, DEPLOYMENT_OWNER, Date.now()), before.webhookSecrets);
    assert.ok(before.webhookSecrets.previous, 'the rotated webhook secret keeps its previous one');
    const withLock = await checkApiKey(t.db, apiKey, Date.now(), findApiKeyWithLock(t.db, 'ROTATE-1'));
    assert.ok(withLock.ok);
    assert.equal(lockCertificate(newKey, 'ROTATE-1', withLock.row).key, lockKey);
    await assert.rejects(loadIntermediatePrivateKey(t.db, oldKey, 'acme-main'));
    assert.throws(() => lockCertificate(oldKey, 'ROTATE-1', withLock.row));
  });

  test('rotating to the current key is refused and changes nothing', async () => {
    const key = randomBytes(32);

    await assert.rejects(rotateMasterKey(t.db, key, Buffer.from(key)), /the new master key is the current one/);
  });
});

forEachDatabase('keyfleet master-key rotate', (kind) => {
  test('the CLI reseals under the new key; afterwards commands work with it and not with the old one', async () => {
    const store = await openTestStore(kind);
    try {
      const env = store.database.env;
      const keyfleet = (extra: Record<string, string>, ...args: string[]) => runKeyfleet({ ...env, ...extra }, ...args);
      assert.equal((await keyfleet({}, 'customer', 'create', 'acme')).exitCode, 0);
      assert.equal((await keyfleet({}, 'cert', 'create', '--customer', 'acme', '--name', 'acme-main')).exitCode, 0);
      const newKey = randomBytes(32).toString('hex');
      const keyFile = path.join(store.settings.dataDir, 'master.key');
      const keyFileBefore = env.MASTER_KEY ? undefined : fs.readFileSync(keyFile, 'utf8');

      const rotation = await keyfleet(env.MASTER_KEY ? { NEW_MASTER_KEY: newKey } : {}, 'master-key', 'rotate', '--json');

      assert.equal(rotation.exitCode, 0, rotation.stderr);
      assert.equal(JSON.parse(rotation.stdout).resealed['intermediate_certificates.private_key_sealed'], 1);
      const afterEnv: Record<string, string> = env.MASTER_KEY ? { MASTER_KEY: newKey } : {};
      assert.equal((await keyfleet(afterEnv, 'token', 'issue', '--scope', 'admin')).exitCode, 0);
      if (env.MASTER_KEY) {
        assert.notEqual((await keyfleet({}, 'token', 'issue', '--scope', 'admin')).exitCode, 0);
      } else {
        assert.notEqual(fs.readFileSync(keyFile, 'utf8'), keyFileBefore);
        assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
      }
    } finally {
      await store.close();
    }
  });
});
