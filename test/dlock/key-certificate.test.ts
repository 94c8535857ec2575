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
