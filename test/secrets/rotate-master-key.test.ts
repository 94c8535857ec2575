import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { checkApiKey, createApiKey } from '../../src/dlock/api-keys.ts';
import { ensureDeploymentSecret } from '../../src/dlock/key-certificate.ts';
import { findApiKeyWithLock, lockCertificate } from '../../src/dlock/locks.ts';
import { createIntermediate, loadIntermediatePrivateKey } from '../../src/pki/intermediates.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import type { KeyRing } from '../../src/secrets/key-ring.ts';
import { loadMasterKey, masterKeyFingerprint } from '../../src/secrets/master-key.ts';
import { SEALED_COLUMNS, createKeyRing } from '../../src/key-ring.ts';
import { countSealedNotUnder } from '../../src/secrets/reseal.ts';
import { RETIRE_AFTER_MS, retirePreviousKey, rotateKeys } from '../../src/secrets/rotate-master-key.ts';
import { DEPLOYMENT_OWNER, rotateWebhookSecret, webhookSecrets } from '../../src/webhooks/secrets.ts';
import { cliChangeSource } from '../../src/cli/context.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase } from '../helpers/databases.ts';
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

    const rotation = await rotateKeys(t.db, t.app.keyRing, cliChangeSource());

    assert.equal(rotation.resealed['dlocks.key_sealed'], 1);
    assert.equal(rotation.resealed['pki_root.private_key_sealed'], 1);
    assert.equal(rotation.resealed['webhook_secrets.previous_secret_sealed'], 1);
    assert.equal(await countSealedNotUnder(t.db, SEALED_COLUMNS, rotation.kid), 0);
    assert.equal(before.lockKey, lockKey);
    assert.deepEqual(await openEverything(t.app.keyRing), before);
    assert.deepEqual(await openEverything(createKeyRing(t.db, { key: t.settings.masterKey ?? readKeyFile(t), source: 'MASTER_KEY' })), before);
    await retirePreviousKey(t.db, t.app.keyRing, cliChangeSource(), Date.now() + RETIRE_AFTER_MS);
  });

  test('a second rotation is refused while the previous key is kept; retiring it is refused until every server can have stopped sealing under it', async () => {
    const rotation = await rotateKeys(t.db, t.app.keyRing, cliChangeSource());

    await assert.rejects(rotateKeys(t.db, t.app.keyRing, cliChangeSource()), new RegExp(`data key ${rotation.previous} is still kept as the previous key: retire it first`));
    await assert.rejects(retirePreviousKey(t.db, t.app.keyRing, cliChangeSource()), /servers that have not re-read the key ring may still seal under it: retire it from /);
    const retired = await retirePreviousKey(t.db, t.app.keyRing, cliChangeSource(), Date.now() + RETIRE_AFTER_MS);

    assert.equal(retired.kid, rotation.previous);
    const row = await t.db.selectFrom('data_keys').selectAll().where('kid', '=', rotation.previous).executeTakeFirstOrThrow();
    assert.equal(row.state, 'retired');
    assert.equal(row.wrapped_key, null);
    await assert.rejects(retirePreviousKey(t.db, t.app.keyRing, cliChangeSource()), /there is no previous data key to retire/);
  });

  test('after a master key change every value opens with the new key; the old key is refused, naming the key the database expects', async () => {
    const before = await openEverything(t.app.keyRing);
    const newKey = { key: randomBytes(32), source: 'MASTER_KEY' };

    const rotation = await rotateKeys(t.db, t.app.keyRing, cliChangeSource(), { newMasterKey: newKey });

    assert.equal(rotation.masterKeyFingerprint, masterKeyFingerprint(newKey.key));
    const newRing = createKeyRing(t.db, newKey);
    assert.deepEqual(await openEverything(newRing), before);
    const oldRing = createKeyRing(t.db, { key: t.settings.masterKey ?? readKeyFile(t), source: 'MASTER_KEY' });
    await assert.rejects(oldRing.refresh(), { message: `database expects master key ${masterKeyFingerprint(newKey.key)}, MASTER_KEY is ${oldRing.fingerprint}` });
    assert.match((await t.app.keyRing.problem()) ?? '', /database expects master key/);
    await retirePreviousKey(t.db, newRing, cliChangeSource(), Date.now() + RETIRE_AFTER_MS);
    await assert.rejects(rotateKeys(t.db, newRing, cliChangeSource(), { newMasterKey: newKey }), /the new master key is the current one/);
  });
});

function readKeyFile(t: TestApp): Buffer {
  return Buffer.from(fs.readFileSync(path.join(t.settings.dataDir, 'master.key'), 'utf8').trim(), 'hex');
}

forEachDatabase('the first data key', (kind) => {
  test('processes starting at the same moment on an empty database agree on one data key', async () => {
    const database = await createTestDatabase(kind);
    const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
    const { db, dialect } = openDatabase(dialectFor(settings));
    try {
      await migrateToLatest(db, dialect);
      const rings = Array.from({ length: 6 }, () => createKeyRing(db, loadMasterKey(settings)));

      const kids = await Promise.all(rings.map((ring) => ring.currentKid()));

      const rows = await db.selectFrom('data_keys').select('kid').execute();
      assert.equal(rows.length, 1);
      assert.deepEqual(new Set(kids), new Set([rows[0]!.kid]));
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
