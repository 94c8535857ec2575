import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import pkiPlugin from '../../src/pki/plugin.ts';
import { ensureRootCa, findRootCa, importRootCa, loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { createIntermediateCertificate, createRootCertificate } from '../../src/pki/x509.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase } from '../helpers/databases.ts';

const DAY_MS = 86_400_000;

forEachDatabase('deployment root CA', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('the first start makes one self-signed ECDSA P-256 root CA valid for 20 years', async () => {
    const rows = await t.db.selectFrom('pki_root').select(['certificate_pem']).execute();

    assert.equal(rows.length, 1);
    const root = new X509Certificate(rows[0]!.certificate_pem);
    assert.equal(root.ca, true);
    assert.ok(root.checkIssued(root));
    assert.ok(root.verify(root.publicKey));
    assert.equal(root.publicKey.asymmetricKeyType, 'ec');
    assert.equal(root.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    const lifetimeDays = (Date.parse(root.validTo) - Date.now()) / DAY_MS;
    assert.ok(Math.abs(lifetimeDays - 7305) < 1, `root valid for ${lifetimeDays} days`);
  });

  test('a later start reuses the stored root instead of making another', async () => {
    const before = await findRootCa(t.db);

    const again = await ensureRootCa(t.db, t.app.keyRing, t.settings.pkiRootValidityDays);

    assert.deepEqual(again, before);
    assert.equal((await t.db.selectFrom('pki_root').select('serial').execute()).length, 1);
  });

  test('the stored root key opens only with the master key and matches the root certificate', async () => {
    const { root, privateKey } = await loadRootPrivateKey(t.db, t.app.keyRing);
    const wrongKey = createKeyRing(t.db, { key: Buffer.alloc(32, 7), source: 'a wrong key' });

    const certificate = new X509Certificate(root.certificatePem);
    assert.ok(certificate.checkPrivateKey(privateKey));
    await assert.rejects(loadRootPrivateKey(t.db, wrongKey));
  });

  test('servers starting at the same moment on an empty database end up with a single root', async () => {
    const database = await createTestDatabase(kind);
    const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    const servers = Array.from({ length: 6 }, () => {
      const server = Fastify({ logger: false });
      server.decorate('settings', settings);
      server.decorate('db', db);
      server.decorate('keyRing', keyRing);
      return server;
    });

    try {
      await Promise.all(servers.map(async (server) => server.register(pkiPlugin).ready()));
      const direct = await Promise.all(Array.from({ length: 6 }, () => ensureRootCa(db, keyRing, 30)));

      const rows = await db.selectFrom('pki_root').select('serial').execute();
      assert.equal(rows.length, 1);
      assert.deepEqual(new Set(direct.map((root) => root.serial)), new Set([rows[0]!.serial]));
    } finally {
      await Promise.all(servers.map((server) => server.close()));
      await db.destroy();
      await database.drop();
    }
  });

  test('a root imported before the first start is the one the deployment uses; a second import is refused', async () => {
    const database = await createTestDatabase(kind);
    const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    const offline = await createRootCertificate(365);
    const another = await createRootCertificate(365);

    try {
      const imported = await importRootCa(db, keyRing, offline.certificatePem, offline.privateKeyPem);
      const atStart = await ensureRootCa(db, keyRing, settings.pkiRootValidityDays);

      assert.equal(imported.imported, true);
      assert.equal(atStart.serial, offline.serial);
      assert.ok(new X509Certificate(atStart.certificatePem).checkPrivateKey((await loadRootPrivateKey(db, keyRing)).privateKey));
      await assert.rejects(importRootCa(db, keyRing, another.certificatePem, another.privateKeyPem), { statusCode: 409 });
    } finally {
      await db.destroy();
      await database.drop();
    }
  });

  test('a root import that is not self-signed or whose key does not match is refused', async () => {
    const offline = await createRootCertificate(365);
    const intermediate = await createIntermediateCertificate(
      { certificatePem: offline.certificatePem, privateKey: createPrivateKey(offline.privateKeyPem) },
      { customer: 'acme', name: 'not-a-root' },
      30,
    );
    const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

    await assert.rejects(importRootCa(t.db, t.app.keyRing, intermediate.certificatePem, intermediate.privateKeyPem), {
      statusCode: 400,
      message: '--cert: a root CA must be self-signed',
    });
    await assert.rejects(importRootCa(t.db, t.app.keyRing, offline.certificatePem, otherKey), {
      statusCode: 400,
      message: '--key: the private key does not match the certificate',
    });
  });
});
