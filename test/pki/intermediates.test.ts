import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { createIntermediate, exportChain, importIntermediate, loadIntermediatePrivateKey } from '../../src/pki/intermediates.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { createIntermediateCertificate, createRootCertificate } from '../../src/pki/x509.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { leakedForms, storedBytes } from './helpers.ts';

const DAY_MS = 86_400_000;

function splitChain(chainPem: string): X509Certificate[] {
  return (chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((pem) => new X509Certificate(pem));
}

forEachDatabase('customer intermediate certificates', (kind) => {
  let t: TestApp;
  /** An intermediate signed by the deployment root outside keyfleet, as an offline CA would make it. */
  async function offlineIntermediate(name: string) {
    const { root, privateKey } = await loadRootPrivateKey(t.db, t.app.keyRing);
    return createIntermediateCertificate({ certificatePem: root.certificatePem, privateKey }, { customer: 'acme', name }, 30);
  }

  before(async () => {
    t = await buildTestApp(kind);
    await createCustomer(t.db, 'acme');
    await createCustomer(t.db, 'globex');
  });
  after(() => t.close());

  test('a created intermediate is a P-256 CA signed by the deployment root, valid for 10 years', async () => {
    const created = await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });

    const { chainPem } = await exportChain(t.db, 'acme-main');
    const [intermediate, root] = splitChain(chainPem);
    assert.ok(intermediate!.verify(root!.publicKey));
    assert.ok(intermediate!.checkIssued(root!));
    assert.equal(intermediate!.ca, true);
    assert.equal(intermediate!.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.match(intermediate!.subject, /CN=acme-main/);
    assert.match(intermediate!.subject, /O=acme/);
    const lifetimeDays = (Date.parse(intermediate!.validTo) - Date.now()) / DAY_MS;
    assert.ok(Math.abs(lifetimeDays - 3653) < 1, `intermediate valid for ${lifetimeDays} days`);
    assert.ok(Date.parse(intermediate!.validFrom) <= Date.now());
    assert.equal(created.customer, 'acme');
    assert.equal(created.imported, false);
  });

  test('the export chain holds the intermediate first and the root second, and nothing else', async () => {
    const { chainPem } = await exportChain(t.db, 'acme-main');
    const rootRow = await t.db.selectFrom('pki_root').select('certificate_pem').executeTakeFirstOrThrow();

    const chain = splitChain(chainPem);
    assert.equal(chain.length, 2);
    assert.match(chain[0]!.subject, /CN=acme-main/);
    assert.equal(chain[1]!.fingerprint256, new X509Certificate(rootRow.certificate_pem).fingerprint256);
    assert.doesNotMatch(chainPem, /PRIVATE KEY/);
  });

  test('the sealed intermediate key opens to the private half of the certificate', async () => {
    const { certificate } = await exportChain(t.db, 'acme-main');

    const privateKey = await loadIntermediatePrivateKey(t.db, t.app.keyRing, 'acme-main');

    assert.ok(new X509Certificate(certificate.certificatePem).checkPrivateKey(privateKey));
  });

  test('a certificate name is unique across customers', async () => {
    await assert.rejects(createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'globex', name: 'acme-main' }), {
      statusCode: 409,
      message: 'certificate acme-main already exists',
    });
  });

  test('a malformed name or an unknown customer is refused and nothing is stored', async () => {
    const before = await t.db.selectFrom('intermediate_certificates').select('id').execute();

    await assert.rejects(createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'bad name' }), {
      statusCode: 400,
      message: 'name: expected 1-64 characters of A-Z a-z 0-9 . _ -, got "bad name"',
    });
    await assert.rejects(createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'x'.repeat(65) }), { statusCode: 400 });
    await assert.rejects(createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'nobody', name: 'fine' }), {
      statusCode: 400,
      message: 'customer: unknown customer nobody',
    });

    assert.equal((await t.db.selectFrom('intermediate_certificates').select('id').execute()).length, before.length);
  });

  test('an intermediate signed by the deployment root imports with its matching key', async () => {
    const offline = await offlineIntermediate('acme-offline');

    const imported = await importIntermediate(t.db, t.app.keyRing, t.settings, {
      customer: 'acme',
      name: 'acme-offline',
      certificateText: offline.certificatePem,
      keyText: offline.privateKeyPem,
    });

    assert.equal(imported.imported, true);
    assert.equal(imported.serial, offline.serial);
    const key = await loadIntermediatePrivateKey(t.db, t.app.keyRing, 'acme-offline');
    assert.ok(new X509Certificate(imported.certificatePem).checkPrivateKey(key));
  });

  test('an import whose key does not match the certificate is refused', async () => {
    const offline = await offlineIntermediate('acme-mismatch');
    const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

    await assert.rejects(
      importIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-mismatch', certificateText: offline.certificatePem, keyText: otherKey }),
      { statusCode: 400, message: '--key: the private key does not match the certificate' },
    );
    assert.equal(await t.db.selectFrom('intermediate_certificates').select('id').where('name', '=', 'acme-mismatch').executeTakeFirst(), undefined);
  });

  test('an import that does not chain to the deployment root, or is not P-256, is refused', async () => {
    const foreignRoot = await createRootCertificate(30);
    const foreign = await createIntermediateCertificate(
      { certificatePem: foreignRoot.certificatePem, privateKey: createPrivateKey(foreignRoot.privateKeyPem) },
      { customer: 'acme', name: 'foreign' },
      30,
    );
    const offline = await offlineIntermediate('acme-p384');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const attempt = (certificateText: string, keyText: string) =>
      importIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'refused', certificateText, keyText });

    await assert.rejects(attempt(foreign.certificatePem, foreign.privateKeyPem), {
      statusCode: 400,
      message: '--cert: the certificate is not signed by the deployment root CA',
    });
    await assert.rejects(attempt(offline.certificatePem, p384), { statusCode: 400, message: '--key: the private key is not ECDSA P-256' });
    await assert.rejects(attempt('not a certificate', offline.privateKeyPem), { statusCode: 400, message: '--cert: no PEM certificate found' });
    await assert.rejects(attempt(offline.certificatePem, 'not a key'), { statusCode: 400, message: '--key: not an unencrypted PEM private key' });
  });

  test('no private key is stored in clear: the database holds none of their forms', async () => {
    const keys = [
      (await loadRootPrivateKey(t.db, t.app.keyRing)).privateKey,
      await loadIntermediatePrivateKey(t.db, t.app.keyRing, 'acme-main'),
      await loadIntermediatePrivateKey(t.db, t.app.keyRing, 'acme-offline'),
    ];

    const { certificate } = await exportChain(t.db, 'acme-main');

    const stored = await storedBytes(kind, t.db, t.database.dataDir, ['pki_root', 'intermediate_certificates', 'customers']);

    // The search sees the rows: the certificate (public) is there.
    assert.ok(stored.includes(Buffer.from(certificate.serial)));
    for (const key of keys) assert.deepEqual(leakedForms(stored, key), []);
  });
});
