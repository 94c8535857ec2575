import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createCustomer } from '../../src/customers/repository.ts';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { checkApiKey, createApiKey } from '../../src/dlock/api-keys.ts';
import { ensureDeploymentSecret } from '../../src/dlock/key-certificate.ts';
import { findApiKeyWithLock, lockCertificate } from '../../src/dlock/locks.ts';
import { createIntermediate, loadIntermediatePrivateKey } from '../../src/pki/intermediates.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import type { KeyRing } from '../../src/secrets/key-ring.ts';
import { masterKeyFingerprint } from '../../src/secrets/master-key.ts';
import { SEALED_COLUMNS, countSealedNotUnder, createKeyRing } from '../../src/secrets/reseal.ts';
import { RETIRE_AFTER_MS, retirePreviousKey, rotateKeys } from '../../src/secrets/rotate-master-key.ts';
import { DEPLOYMENT_OWNER, rotateWebhookSecret, webhookSecrets } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, openTestStore, type TestApp, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestCustomer } from '../helpers/tokens.ts';

forEachDatabase('master key rotation', (kind) => {
  let t: TestApp;
  let lockKey: string;
  let apiKey: string;
  before(async () => {
    t = await buildTestApp(kind);
    await createTestCustomer(t, 'acme');
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
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

  /** Every sealed value, opened with `ring`. */
  const openEverything = async (ring: KeyRing) => {
    const withLock = await checkApiKey(t.db, apiKey, Date.now(), findApiKeyWithLock(t.db, 'ROTATE-1'));
    assert.ok(withLock.ok);
    return {
      root: (await loadRootPrivateKey(t.db, ring)).privateKey.export({ format: 'pem', type: 'pkcs8' }),
      intermediate: (await loadIntermediatePrivateKey(t.db, ring, 'acme-main')).export({ format: 'pem', type: 'pkcs8' }),
      signingKid: (await loadActiveSigningKey(t.db, ring)).kid,
      deploymentSecret: await ensureDeploymentSecret(t.db, ring),
      webhookSecrets: await webhookSecrets(t.db, ring, DEPLOYMENT_OWNER, Date.now()),
      lockKey: (await lockCertificate(ring, 'ROTATE-1', withLock.row)).key,
    };
  };

  test('every column named *_sealed in the schema is in SEALED_COLUMNS', async () => {
    // PostgreSQL lists the tables of every schema: only this database's count.
    const schema = await t.dialect.migrationTableSchema(t.db as never);
    const sealedInSchema = (await t.db.introspection.getTables())
      .filter((table) => table.schema === schema)
      .flatMap((table) => table.columns.filter((column) => column.name.endsWith('_sealed')).map((column) => `${table.name}.${column.name}`))
      .sort();

    assert.deepEqual(SEALED_COLUMNS.map((sealed) => `${sealed.table}.${sealed.column}`).sort(), sealedInSchema);
  });

  test('after a data key rotation every value names the new key and opens unchanged, in this process and in a new one', async () => {
    await rotateWebhookSecret(t.db, t.app.keyRing, DEPLOYMENT_OWNER, Date.now(), 3_600_000);
    const before = await openEverything(t.app.keyRing);

    const rotation = await rotateKeys(t.db, t.app.keyRing);

    assert.equal(rotation.resealed['dlocks.key_sealed'], 1);
    assert.equal(rotation.resealed['pki_root.private_key_sealed'], 1);
    assert.equal(rotation.resealed['webhook_secrets.previous_secret_sealed'], 1);
    assert.equal(await countSealedNotUnder(t.db, rotation.kid), 0);
    assert.equal(before.lockKey, lockKey);
    assert.deepEqual(await openEverything(t.app.keyRing), before);
    assert.deepEqual(await openEverything(createKeyRing(t.db, { key: t.settings.masterKey ?? readKeyFile(t), source: 'MASTER_KEY' })), before);
    await retirePreviousKey(t.db, t.app.keyRing, Date.now() + RETIRE_AFTER_MS);
  });

  test('a second rotation is refused while the previous key is kept; retiring it is refused until every server can have stopped sealing under it', async () => {
    const rotation = await rotateKeys(t.db, t.app.keyRing);

    await assert.rejects(rotateKeys(t.db, t.app.keyRing), new RegExp(`data key ${rotation.previous} is still kept as the previous key: retire it first`));
    await assert.rejects(retirePreviousKey(t.db, t.app.keyRing), /servers that have not re-read the key ring may still seal under it: retire it from /);
    const retired = await retirePreviousKey(t.db, t.app.keyRing, Date.now() + RETIRE_AFTER_MS);

    assert.equal(retired.kid, rotation.previous);
    const row = await t.db.selectFrom('data_keys').selectAll().where('kid', '=', rotation.previous).executeTakeFirstOrThrow();
    assert.equal(row.state, 'retired');
    assert.equal(row.wrapped_key, null);
    await assert.rejects(retirePreviousKey(t.db, t.app.keyRing), /there is no previous data key to retire/);
  });

  test('after a master key change every value opens with the new key; the old key is refused, naming the key the database expects', async () => {
    const before = await openEverything(t.app.keyRing);
    const newKey = { key: randomBytes(32), source: 'MASTER_KEY' };

    const rotation = await rotateKeys(t.db, t.app.keyRing, { newMasterKey: newKey });

    assert.equal(rotation.masterKeyFingerprint, masterKeyFingerprint(newKey.key));
    const newRing = createKeyRing(t.db, newKey);
    assert.deepEqual(await openEverything(newRing), before);
    const oldRing = createKeyRing(t.db, { key: t.settings.masterKey ?? readKeyFile(t), source: 'MASTER_KEY' });
    await assert.rejects(oldRing.refresh(), { message: `database expects master key ${masterKeyFingerprint(newKey.key)}, MASTER_KEY is ${oldRing.fingerprint}` });
    assert.match((await t.app.keyRing.problem()) ?? '', /database expects master key/);
    await retirePreviousKey(t.db, newRing, Date.now() + RETIRE_AFTER_MS);
    await assert.rejects(rotateKeys(t.db, newRing, { newMasterKey: newKey }), /the new master key is the current one/);
  });
});

function readKeyFile(t: TestApp): Buffer {
  return Buffer.from(fs.readFileSync(path.join(t.settings.dataDir, 'master.key'), 'utf8').trim(), 'hex');
}

/** A customer and an intermediate, as the commands would make them. */
async function seedCertificate(store: TestStore): Promise<void> {
  await migrateToLatest(store.db, dialectFor(store.settings));
  await createCustomer(store.db, 'acme');
  await createIntermediate(store.db, store.keyRing, store.settings, { customer: 'acme', name: 'acme-main' });
}

forEachDatabase('keyfleet master-key rotate and retire', (kind) => {
  test('without --yes each says what it would do and exits 2; with it, rotate reseals and retire waits for the servers', async () => {
    const store = await openTestStore(kind);
    try {
      const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);
      await seedCertificate(store);

      const unconfirmed = await keyfleet('master-key', 'rotate');
      const rotation = await keyfleet('master-key', 'rotate', '--yes', '--json');
      const retireUnconfirmed = await keyfleet('master-key', 'retire');
      const retireEarly = await keyfleet('master-key', 'retire', '--yes');

      assert.equal(unconfirmed.exitCode, 2);
      assert.match(unconfirmed.stderr.split('\n')[0]!, /master-key rotate would make a new data key current and reseal every private key and secret; run it again with --yes/);
      assert.equal(rotation.exitCode, 0, rotation.stderr);
      const result = JSON.parse(rotation.stdout) as { data_key: string; previous_data_key: string; resealed: Record<string, number> };
      assert.equal(result.resealed['intermediate_certificates.private_key_sealed'], 1);
      assert.equal(await countSealedNotUnder(store.db, result.data_key), 0);
      assert.equal(retireUnconfirmed.exitCode, 2);
      assert.equal(retireEarly.exitCode, 1);
      assert.match(retireEarly.stderr, new RegExp(`data key ${result.previous_data_key} stopped being current at`));
      assert.equal((await keyfleet('token', 'issue', '--scope', 'admin')).exitCode, 0);
    } finally {
      await store.close();
    }
  });

  test('with a new master key, commands with the old key are refused naming the new one, and work with it', async () => {
    const store = await openTestStore(kind);
    try {
      const env = store.database.env;
      const keyfleet = (extra: Record<string, string>, ...args: string[]) => runKeyfleet({ ...env, ...extra }, ...args);
      await seedCertificate(store);
      const newKey = randomBytes(32);
      const keyFile = path.join(store.settings.dataDir, 'master.key');
      const oldKeyFile = env.MASTER_KEY ? undefined : fs.readFileSync(keyFile, 'utf8');
      const newKeyFile = path.join(store.settings.dataDir, 'new.key');
      fs.writeFileSync(newKeyFile, newKey.toString('hex'));

      const rotation = await keyfleet({}, 'master-key', 'rotate', '--new-key-file', newKeyFile, '--yes', '--json');

      assert.equal(rotation.exitCode, 0, rotation.stderr);
      assert.equal(JSON.parse(rotation.stdout).master_key, masterKeyFingerprint(newKey));
      const withNewKey: Record<string, string> = env.MASTER_KEY ? { MASTER_KEY: newKey.toString('hex') } : {};
      assert.equal((await keyfleet(withNewKey, 'token', 'issue', '--scope', 'admin')).exitCode, 0);
      if (env.MASTER_KEY) {
        const refused = await keyfleet({}, 'token', 'issue', '--scope', 'admin');
        assert.equal(refused.exitCode, 1);
        assert.match(refused.stderr, new RegExp(`database expects master key ${masterKeyFingerprint(newKey)}, MASTER_KEY is ${masterKeyFingerprint(Buffer.from(env.MASTER_KEY, 'hex'))}`));
      } else {
        assert.equal(fs.readFileSync(keyFile, 'utf8'), newKey.toString('hex'));
        assert.equal(fs.readFileSync(`${keyFile}.previous`, 'utf8'), oldKeyFile);
        assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
        assert.equal(fs.statSync(`${keyFile}.previous`).mode & 0o777, 0o600);
      }
    } finally {
      await store.close();
    }
  });
});
