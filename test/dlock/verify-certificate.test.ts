import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import type { KeyCertificate } from '../../src/dlock/key-certificate.ts';
import { verifyKeyCertificate } from '../../src/dlock/verify-certificate.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { createRootCertificate } from '../../src/pki/x509.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

const DAY_MS = 86_400_000;

forEachDatabase('DLock key certificate verifier', (kind) => {
  let t: TestApp;
  let certificate: KeyCertificate;
  let base64Form: string;
  let chain: string;
  let otherChain: string;

  before(async () => {
    t = await buildTestApp(kind);
    await createCustomer(t.db, 'acme');
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-other' });
    const headers = { authorization: `Bearer ${(await createApiKey(t.db, { customer: 'acme' })).key}` };
    const posted = await t.app.inject({
      method: 'POST',
      url: '/v1/dlock',
      headers,
      payload: { serial_no: 'LOCK-V', type: 'door', certificate: 'acme-main', enrolment_code: 'a1'.repeat(16), base64: false },
    });
    certificate = posted.json().data.key;
    base64Form = (await t.app.inject({ method: 'GET', url: '/v1/dlock/LOCK-V?base64=true', headers })).json().data.key;
    chain = (await t.app.inject({ method: 'GET', url: '/v1/certificates/acme-main', headers })).json().data.chain;
    otherChain = (await t.app.inject({ method: 'GET', url: '/v1/certificates/acme-other', headers })).json().data.chain;
  });
  after(() => t.close());

  test('an issued certificate verifies in both forms, as object or text', () => {
    for (const input of [certificate, JSON.stringify(certificate), base64Form]) {
      const result = verifyKeyCertificate(input, chain);
      assert.equal(result.ok, true, JSON.stringify(result));
    }
    const root = chain.slice(chain.indexOf('-----END CERTIFICATE-----') + 26);
    assert.equal(verifyKeyCertificate(certificate, chain, { trustedRootPem: root }).ok, true);
  });

  test('a tampered certificate is rejected with bad-signature', () => {
    const tampered: KeyCertificate[] = [
      { ...certificate, key: Buffer.alloc(16, 9).toString('base64') },
      { ...certificate, expires: certificate.expires + 1 },
      { ...certificate, data: { ...certificate.data, serial_no: 'LOCK-W' } },
      { ...certificate, data: { ...certificate.data, customer: 'globex' } },
    ];
    for (const input of tampered) {
      const result = verifyKeyCertificate(input, chain);
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.failure, 'bad-signature');
    }
  });

  test('a wrong chain is rejected and the reason says why', () => {
    const other = verifyKeyCertificate(certificate, otherChain);
    assert.equal(!other.ok && other.failure, 'issuer-mismatch');

    const [intermediate, root] = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
    const reversed = verifyKeyCertificate(certificate, `${root}\n${intermediate}\n`);
    assert.equal(!reversed.ok && reversed.failure, 'chain-invalid');
    const alone = verifyKeyCertificate(certificate, intermediate!);
    assert.equal(!alone.ok && alone.failure, 'chain-invalid');
  });

  test('a chain that does not end in the pinned root is rejected', async () => {
    const foreignRoot = await createRootCertificate(30);
    const result = verifyKeyCertificate(certificate, chain, { trustedRootPem: foreignRoot.certificatePem });
    assert.equal(!result.ok && result.failure, 'untrusted-root');
  });

  test('an expired or not yet valid certificate is rejected', () => {
    const expired = verifyKeyCertificate(certificate, chain, { now: certificate.expires * 1000 });
    assert.equal(!expired.ok && expired.failure, 'expired');
    const early = verifyKeyCertificate(certificate, chain, { now: (certificate.valid - 1) * 1000 });
    assert.equal(!early.ok && early.failure, 'not-yet-valid');
    const afterIntermediate = verifyKeyCertificate(certificate, chain, { now: Date.now() + 20 * 365 * DAY_MS });
    assert.equal(!afterIntermediate.ok && afterIntermediate.failure, 'intermediate-expired');
  });

  test('malformed input is rejected as malformed, naming what is wrong', () => {
    const { signature: _signature, ...unsigned } = certificate;
    const cases: Array<[unknown, RegExp]> = [
      ['not base64 !', /base64/],
      [Buffer.from('{not json').toString('base64'), /JSON/],
      [unsigned, /members/],
      [{ ...certificate, extra: 1 }, /members/],
      [{ ...certificate, type: 'dlock-key/v2' }, /^type/],
      [{ ...certificate, valid: '1' }, /^valid/],
      [{ ...certificate, key: 'AAAA' }, /^key/],
      [{ ...certificate, signature: 'AAAA' }, /^signature/],
      [{ ...certificate, data: { ...certificate.data, serial_no: 1 } }, /^data/],
    ];
    for (const [input, reason] of cases) {
      const result = verifyKeyCertificate(input, chain);
      assert.equal(!result.ok && result.failure, 'malformed', JSON.stringify(input));
      assert.match(!result.ok ? result.reason : '', reason);
    }
  });

  test('keyfleet cert verify exits 0 for a good certificate and 1 naming the failure for a tampered one', async () => {
    const dir = t.database.dataDir;
    const write = (name: string, content: string) => {
      fs.writeFileSync(path.join(dir, name), content);
      return path.join(dir, name);
    };
    const chainFile = write('chain.pem', chain);
    const good = await runKeyfleet({}, 'cert', 'verify', '--chain', chainFile, write('good.b64', `${base64Form}\n`));
    assert.equal(good.exitCode, 0, good.stderr);
    assert.match(good.stdout, /^valid: lock LOCK-V of acme/);

    const json = await runKeyfleet({}, 'cert', 'verify', '--json', '--chain', chainFile, write('good.json', JSON.stringify(certificate)));
    assert.equal(json.exitCode, 0);
    assert.deepEqual(JSON.parse(json.stdout), { valid: true, serial_no: 'LOCK-V', customer: 'acme', issuer: 'acme-main', expires: certificate.expires });

    const bad = await runKeyfleet({}, 'cert', 'verify', '--json', '--chain', chainFile, write('bad.json', JSON.stringify({ ...certificate, expires: 1 })));
    assert.equal(bad.exitCode, 1);
    assert.equal(JSON.parse(bad.stdout).failure, 'bad-signature');

    const late = await runKeyfleet({}, 'cert', 'verify', '--at', String(certificate.expires), '--chain', chainFile, write('late.json', JSON.stringify(certificate)));
    assert.equal(late.exitCode, 1);
    assert.match(late.stdout, /^invalid \(expired\)/);
  });
});
