import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { after, before, test } from 'node:test';
import { deriveLockKey, ensureDeploymentSecret, issueKeyCertificate, toBase64Form } from '../../src/dlock/key-certificate.ts';
import { canonicalJson } from '../../src/shared/canonical-json.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { storedBytes } from '../pki/helpers.ts';

test('the lock key is 16 bytes, the same for the same inputs and different when any input changes', () => {
  const code = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
  const secret = Buffer.alloc(32, 7);
  const key = deriveLockKey(code, secret, 'LOCK-1');

  assert.equal(key.length, 16);
  assert.deepEqual(deriveLockKey(code, secret, 'LOCK-1'), key);
  assert.notDeepEqual(deriveLockKey(code, secret, 'LOCK-2'), key);
  assert.notDeepEqual(deriveLockKey(code, Buffer.alloc(32, 8), 'LOCK-1'), key);
  assert.notDeepEqual(deriveLockKey(Buffer.from('00112233445566778899aabbccddeefe', 'hex'), secret, 'LOCK-1'), key);
});

// Every enrolled lock holds a key made by this derivation: changing it re-keys the fleet
// silently. The expected keys come from OpenSSL, not from the code under test:
//   openssl kdf -keylen 16 -kdfopt digest:SHA256 -kdfopt hexkey:<code> -kdfopt hexsalt:<secret> \
//     -kdfopt info:'keyfleet dlock-key/v1<serial>' HKDF
test('the lock key matches HKDF-SHA256 known-answer vectors computed outside keyfleet', () => {
  const vectors = [
    { code: '00112233445566778899aabbccddeeff', secret: '07'.repeat(32), serial: 'LOCK-1', key: '72d8f23149def99e954e6ae8398b16d9' },
    {
      code: '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f',
      secret: 'fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0efeeedecebeae9e8e7e6e5e4e3e2e1e0',
      serial: 'KF-0042',
      key: 'e6c89016051c3bdbca3f94a84f47f9e6',
    },
  ];

  for (const vector of vectors) {
    assert.equal(deriveLockKey(Buffer.from(vector.code, 'hex'), Buffer.from(vector.secret, 'hex'), vector.serial).toString('hex'), vector.key);
  }
});

test('a key certificate is signed in IEEE P1363 form over the canonical JSON without its signature', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certificate = issueKeyCertificate({
    issuer: 'acme-main',
    signingKey: privateKey,
    data: { serial_no: 'LOCK-1', lock_type: '', customer: 'acme', certificate_id: '0a' },
    lockKey: Buffer.alloc(16, 1),
    validityDays: 2,
    now: 1_700_000_000_500,
  });

  assert.equal(certificate.valid, 1_700_000_000);
  assert.equal(certificate.expires, 1_700_000_000 + 2 * 86_400);
  assert.equal(certificate.key, Buffer.alloc(16, 1).toString('base64'));
  const { signature, ...unsigned } = certificate;
  assert.equal(Buffer.from(signature, 'base64').length, 64);
  assert.ok(verify('sha256', Buffer.from(canonicalJson(unsigned)), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64')));
  assert.equal(Buffer.from(toBase64Form(certificate), 'base64').toString('utf8'), canonicalJson(certificate));
});

// A lock verifies certificates with its own code: the signed text is written out by hand here
// (RFC 8785: members sorted by code unit, no whitespace) rather than made by canonicalJson.
test('a key certificate verifies with an independent verifier: P-256 IEEE P1363 over hand-written canonical JSON', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const certificate = issueKeyCertificate({
    issuer: 'acme-main',
    signingKey: privateKey,
    data: { serial_no: 'LOCK-1', lock_type: 'door', customer: 'acme', certificate_id: '0a' },
    lockKey: Buffer.from('72d8f23149def99e954e6ae8398b16d9', 'hex'),
    validityDays: 365,
    now: 1_700_000_000_000,
  });
  const signedText =
    '{"data":{"certificate_id":"0a","customer":"acme","lock_type":"door","serial_no":"LOCK-1"},' +
    '"expires":1731536000,"issuer":"acme-main","key":"ctjyMUne+Z6VTmroOYsW2Q==","type":"dlock-key/v1","valid":1700000000}';
  const signature = Buffer.from(certificate.signature, 'base64');

  assert.equal(signature.length, 64);
  assert.ok(verify('sha256', Buffer.from(signedText, 'utf8'), { key: publicKey, dsaEncoding: 'ieee-p1363' }, signature));
  assert.equal(
    Buffer.from(toBase64Form(certificate), 'base64').toString('utf8'),
    '{"data":{"certificate_id":"0a","customer":"acme","lock_type":"door","serial_no":"LOCK-1"},' +
      `"expires":1731536000,"issuer":"acme-main","key":"ctjyMUne+Z6VTmroOYsW2Q==","signature":"${certificate.signature}",` +
      '"type":"dlock-key/v1","valid":1700000000}',
  );
});

forEachDatabase('DLock deployment secret', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
  });
  after(() => t.close());

  test('the deployment secret is made on first start, kept across calls, and stored sealed', async () => {
    const secrets = await Promise.all([1, 2, 3].map(() => ensureDeploymentSecret(t.db, t.app.keyRing)));

    assert.equal(secrets[0]!.length, 32);
    for (const secret of secrets) assert.deepEqual(secret, secrets[0]);
    assert.equal((await t.db.selectFrom('dlock_secret').selectAll().execute()).length, 1);
    const haystack = await storedBytes(kind, t.db, t.database.dataDir, ['dlock_secret']);
    for (const form of [secrets[0]!, Buffer.from(secrets[0]!.toString('hex')), Buffer.from(secrets[0]!.toString('base64'))]) {
      assert.equal(haystack.includes(form), false);
    }
  });
});
