import assert from 'node:assert/strict';
import { X509Certificate, verify } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { createApiKey, revokeApiKey } from '../../src/dlock/api-keys.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { storedBytes } from '../pki/helpers.ts';

const JSON_UTF8 = 'application/json; charset=utf-8';
const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';

/**
 * RFC 8785 canonical JSON for the values a key certificate holds (strings, integers,
 * objects), written here so that the check does not use the issuing code.
 */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

forEachDatabase('DLock routes', (kind) => {
  let t: TestApp;
  let acmeKey: string;
  let globexKey: string;
  let serialCounter = 0;
  const nextSerial = () => `LOCK-${kind}-${++serialCounter}`;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const body = (overrides: Record<string, unknown> = {}) => ({
    serial_no: nextSerial(),
    type: 'padlock',
    certificate: 'acme-main',
    enrolment_code: ENROLMENT_CODE,
    base64: false,
    ...overrides,
  });
  const post = (payload: unknown, key = acmeKey) => t.app.inject({ method: 'POST', url: '/v1/dlock', headers: bearer(key), payload: payload as object });

  before(async () => {
    t = await buildTestApp(kind);
    await createCustomer(t.db, 'acme');
    await createCustomer(t.db, 'globex');
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'globex', name: 'globex-main' });
    acmeKey = (await createApiKey(t.db, { customer: 'acme' })).key;
    globexKey = (await createApiKey(t.db, { customer: 'globex' })).key;
  });
  after(() => t.close());

  test('POST registers a lock and returns the key certificate in native JSON form', async () => {
    const request = body();
    const response = await post(request);

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    const json = response.json();
    assert.equal(json.status, 200);
    assert.equal(json.msg, 'DLock registered successfully');
    const certificate = json.data.key;
    assert.deepEqual(Object.keys(certificate).sort(), ['data', 'expires', 'issuer', 'key', 'signature', 'type', 'valid']);
    assert.equal(certificate.type, 'dlock-key/v1');
    assert.equal(certificate.issuer, 'acme-main');
    assert.equal(certificate.expires - certificate.valid, 365 * 86_400);
    assert.ok(Math.abs(certificate.valid - Date.now() / 1000) < 60);
    assert.equal(certificate.data.serial_no, request.serial_no);
    assert.equal(certificate.data.lock_type, 'padlock');
    assert.equal(certificate.data.customer, 'acme');
    assert.match(certificate.data.certificate_id, /^[0-9a-f]+$/);
    assert.equal(Buffer.from(certificate.key, 'base64').length, 16);
    assert.equal(Buffer.from(certificate.signature, 'base64').length, 64);
  });

  test('POST with base64 true returns the base64 of the canonical JSON, and GET returns the stored certificate unchanged', async () => {
    const request = body({ base64: true, type: '' });
    const posted = await post(request);
    assert.equal(posted.statusCode, 200);
    const encoded: string = posted.json().data.key;
    assert.match(encoded, /^[A-Za-z0-9+/]+=*$/);
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const certificate = JSON.parse(decoded);
    assert.equal(canonical(certificate), decoded);
    assert.equal(certificate.data.lock_type, '');

    const native = await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) });
    assert.equal(native.statusCode, 200);
    assert.equal(native.headers['content-type'], JSON_UTF8);
    assert.deepEqual(native.json(), { status: 200, msg: 'DLock fetched successfully', data: { key: certificate } });

    const base64 = await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}?base64=true`, headers: bearer(acmeKey) });
    assert.deepEqual(base64.json(), { status: 200, msg: 'DLock fetched successfully', data: { key: encoded } });
  });

  test('the signature verifies with node:crypto against the PEM chain from GET /v1/certificates', async () => {
    const certificate = (await post(body())).json().data.key;
    const chainResponse = await t.app.inject({ method: 'GET', url: '/v1/certificates/acme-main', headers: bearer(acmeKey) });
    assert.equal(chainResponse.statusCode, 200);
    assert.equal(chainResponse.headers['content-type'], JSON_UTF8);
    const chain: string = chainResponse.json().data.chain;
    const pems = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
    assert.equal(pems.length, 2);
    const [intermediate, root] = pems.map((pem) => new X509Certificate(pem)) as [X509Certificate, X509Certificate];

    assert.ok(root.verify(root.publicKey), 'root is self-signed');
    assert.ok(intermediate.checkIssued(root));
    assert.ok(intermediate.verify(root.publicKey), 'intermediate is signed by the root');
    assert.equal(intermediate.serialNumber.toLowerCase(), certificate.data.certificate_id);

    const { signature, ...unsigned } = certificate;
    const signed = Buffer.from(canonical(unsigned), 'utf8');
    assert.ok(verify('sha256', signed, { key: intermediate.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64')));
    const tampered = Buffer.from(canonical({ ...unsigned, expires: unsigned.expires + 1 }), 'utf8');
    assert.equal(verify('sha256', tampered, { key: intermediate.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64')), false);
  });

  test('the lock key depends on the enrolment code and the serial number', async () => {
    const a = (await post(body())).json().data.key.key;
    const b = (await post(body())).json().data.key.key;
    const c = (await post(body({ enrolment_code: 'ff'.repeat(8) }))).json().data.key.key;
    assert.notEqual(a, b);
    assert.notEqual(a, c);
  });

  test('each malformed body field gets 400 naming it', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ serial_no: '' }, 'serial_no'],
      [{ serial_no: 'a b' }, 'serial_no'],
      [{ serial_no: 'x'.repeat(65) }, 'serial_no'],
      [{ serial_no: 7 }, 'serial_no'],
      [{ type: null }, 'type'],
      [{ type: 3 }, 'type'],
      [{ type: 'x'.repeat(201) }, 'type'],
      [{ type: 'a\u0000b' }, 'type'],
      [{ type: '\ud800' }, 'type'],
      [{ certificate: 'bad name' }, 'certificate'],
      [{ certificate: 1 }, 'certificate'],
      [{ enrolment_code: 'abc' }, 'enrolment_code'],
      [{ enrolment_code: 'zz'.repeat(8) }, 'enrolment_code'],
      [{ enrolment_code: 'ab'.repeat(7) }, 'enrolment_code'],
      [{ enrolment_code: 'ab'.repeat(257) }, 'enrolment_code'],
      [{ enrolment_code: '' }, 'enrolment_code'],
      [{ base64: 'true' }, 'base64'],
      [{ base64: 1 }, 'base64'],
      [{ extra: 1 }, 'extra'],
    ];
    for (const [override, field] of cases) {
      const response = await post(body(override));
      assert.equal(response.statusCode, 400, JSON.stringify(override));
      assert.equal(response.headers['content-type'], JSON_UTF8);
      const json = response.json();
      assert.equal(json.status, 400);
      assert.ok(json.msg.startsWith(`${field}:`), `${JSON.stringify(override)} → ${json.msg}`);
    }
    for (const field of ['serial_no', 'type', 'certificate', 'enrolment_code', 'base64']) {
      const request = body();
      delete (request as Record<string, unknown>)[field];
      const response = await post(request);
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { status: 400, msg: `${field}: required` });
    }
  });

  test('an enrolment code of 8 and of 256 bytes, in either case, is accepted', async () => {
    for (const code of ['AB'.repeat(8), 'cd'.repeat(256)]) {
      assert.equal((await post(body({ enrolment_code: code }))).statusCode, 200, code.length.toString());
    }
  });

  test("a certificate that is unknown or another customer's gets 403 on enrolment, and 404 when its chain is read", async () => {
    for (const certificate of ['globex-main', 'nobody']) {
      const response = await post(body({ certificate }));
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { status: 403, msg: 'Certificate not found for this customer' });
      const chain = await t.app.inject({ method: 'GET', url: `/v1/certificates/${certificate}`, headers: bearer(acmeKey) });
      assert.equal(chain.statusCode, 404);
      assert.deepEqual(chain.json(), { status: 404, msg: 'Certificate not found' });
    }
    const own = await t.app.inject({ method: 'GET', url: '/v1/certificates/globex-main', headers: bearer(globexKey) });
    assert.equal(own.statusCode, 200);
  });

  test('a certificate past its validity gets 400 naming the certificate field', async () => {
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-old' });
    await t.db.updateTable('intermediate_certificates').set({ not_after: Date.now() - 1000 }).where('name', '=', 'acme-old').execute();

    const response = await post(body({ certificate: 'acme-old' }));

    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { status: 400, msg: 'certificate: acme-old has expired' });
  });

  test('a serial already registered gets 400, whoever registers it', async () => {
    const request = body();
    assert.equal((await post(request)).statusCode, 200);
    const again = await post({ ...request, base64: true });
    assert.equal(again.statusCode, 400);
    assert.deepEqual(again.json(), { status: 400, msg: `serial_no: DLock ${request.serial_no} is already registered` });
    assert.equal((await post({ ...request, certificate: 'globex-main' }, globexKey)).statusCode, 400);
  });

  test('two concurrent POSTs of one serial: one 200, one 400', async () => {
    for (let round = 0; round < 5; round++) {
      const request = body();
      const responses = await Promise.all([post(request), post({ ...request, enrolment_code: 'ee'.repeat(8) })]);
      assert.deepEqual(responses.map((r) => r.statusCode).sort(), [200, 400]);
      const winner = responses.find((r) => r.statusCode === 200)!.json().data.key;
      const fetched = await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) });
      assert.deepEqual(fetched.json().data.key, winner);
    }
  });

  test("GET and DELETE of an unknown lock or another customer's lock get 404", async () => {
    const request = body();
    assert.equal((await post(request)).statusCode, 200);
    for (const [url, key] of [
      ['/v1/dlock/NO-SUCH-LOCK', acmeKey],
      [`/v1/dlock/${request.serial_no}`, globexKey],
    ] as const) {
      for (const method of ['GET', 'DELETE'] as const) {
        const response = await t.app.inject({ method, url, headers: bearer(key) });
        assert.equal(response.statusCode, 404, `${method} ${url}`);
        assert.equal(response.headers['content-type'], JSON_UTF8);
        assert.deepEqual(response.json(), { status: 404, msg: 'DLock not found' });
      }
    }
    assert.equal((await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) })).statusCode, 200);
  });

  test('DELETE answers 204 with no body and frees the serial for a new POST', async () => {
    const request = body();
    const first = (await post(request)).json().data.key;
    const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) });
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
    assert.equal((await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) })).statusCode, 404);

    const again = await post({ ...request, certificate: 'globex-main' }, globexKey);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().data.key.data.customer, 'globex');
    assert.equal(again.json().data.key.key, first.key, 'same code and serial derive the same key');
  });

  test('a lock fetched, deleted and enrolled again with another code is fetched with its new certificate, in both forms', async () => {
    const request = body();
    const fetch = async (query = '') => (await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}${query}`, headers: bearer(acmeKey) })).json().data.key;
    await post(request);
    const first = await fetch();
    const firstBase64 = await fetch('?base64=true');
    await t.app.inject({ method: 'DELETE', url: `/v1/dlock/${request.serial_no}`, headers: bearer(acmeKey) });

    const enrolled = (await post({ ...request, enrolment_code: 'ff'.repeat(16) })).json().data.key;

    const second = await fetch();
    assert.notEqual(second.key, first.key);
    assert.deepEqual(second, enrolled);
    const secondBase64 = await fetch('?base64=true');
    assert.notEqual(secondBase64, firstBase64);
    assert.deepEqual(JSON.parse(Buffer.from(secondBase64, 'base64').toString('utf8')), enrolled);
  });

  test('GET and DELETE work with the headers contract §0.5 sends on every call, Content-Type included', async () => {
    const request = body();
    assert.equal((await post(request)).statusCode, 200);
    const headers = { ...bearer(acmeKey), 'content-type': 'application/json', accept: 'application/json', 'accept-charset': 'utf-8' };
    const fetched = await t.app.inject({ method: 'GET', url: `/v1/dlock/${request.serial_no}`, headers });
    assert.equal(fetched.statusCode, 200);
    const deleted = await t.app.inject({ method: 'DELETE', url: `/v1/dlock/${request.serial_no}/`, headers });
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
  });

  test('PUT and PATCH get 405 with an Allow header', async () => {
    for (const [url, allow] of [
      ['/v1/dlock', 'POST'],
      ['/v1/dlock/SOME-LOCK', 'GET, HEAD, DELETE'],
    ] as const) {
      for (const method of ['PUT', 'PATCH'] as const) {
        for (const headers of [bearer(acmeKey), {}]) {
          const response = await t.app.inject({ method, url, headers, payload: {} });
          assert.equal(response.statusCode, 405, `${method} ${url}`);
          assert.equal(response.headers.allow, allow);
          assert.equal(response.headers['content-type'], JSON_UTF8);
          assert.deepEqual(response.json(), { status: 405, msg: `Method ${method} not allowed` });
        }
      }
    }
  });

  test('the other methods of /v1/dlock and /v1/dlock/:serial get 405 too, not 404', async () => {
    for (const [method, url, allow] of [
      ['GET', '/v1/dlock', 'POST'],
      ['DELETE', '/v1/dlock', 'POST'],
      ['POST', '/v1/dlock/SOME-LOCK', 'GET, HEAD, DELETE'],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: bearer(acmeKey) });
      assert.equal(response.statusCode, 405, `${method} ${url}`);
      assert.equal(response.headers.allow, allow);
      assert.equal(response.headers['content-type'], JSON_UTF8);
      assert.deepEqual(response.json(), { status: 405, msg: `Method ${method} not allowed` });
    }
  });


  test('every route answers 401 to a missing, malformed or revoked key', async () => {
    const revoked = await createApiKey(t.db, { customer: 'acme' });
    await revokeApiKey(t.db, revoked.id);
    const registered = body();
    assert.equal((await post(registered)).statusCode, 200);
    const calls = [
      { method: 'POST', url: '/v1/dlock', payload: body() },
      { method: 'GET', url: `/v1/dlock/${registered.serial_no}` },
      { method: 'DELETE', url: `/v1/dlock/${registered.serial_no}` },
      { method: 'GET', url: '/v1/certificates/acme-main' },
    ] as const;
    const headers: Array<[Record<string, string>, string]> = [
      [{}, 'Missing access token'],
      [{ authorization: 'Bearer not-a-key' }, 'Malformed access token'],
      [bearer(revoked.key), 'Access token invalid or revoked'],
    ];
    for (const call of calls) {
      for (const [header, msg] of headers) {
        const response = await t.app.inject({ ...call, headers: header });
        assert.equal(response.statusCode, 401, `${call.method} ${call.url} ${msg}`);
        assert.equal(response.headers['content-type'], JSON_UTF8);
        assert.deepEqual(response.json(), { status: 401, msg });
      }
    }
    assert.equal((await t.app.inject({ method: 'GET', url: `/v1/dlock/${registered.serial_no}`, headers: bearer(acmeKey) })).statusCode, 200);
  });

  test('the key is checked before the body and the path: without a valid key, an empty body or a bad serial is 401, not 400', async () => {
    const calls = [
      { method: 'POST', url: '/v1/dlock', payload: {} },
      { method: 'POST', url: '/v1/dlock', payload: { ...body(), serial_no: 'bad serial' } },
      { method: 'GET', url: '/v1/dlock/a%00b' },
      { method: 'DELETE', url: '/v1/dlock/a%00b' },
      { method: 'GET', url: '/v1/certificates/a%00b' },
    ] as const;
    for (const call of calls) {
      for (const headers of [{}, { authorization: 'Bearer not-a-key' }]) {
        const response = await t.app.inject({ ...call, headers });

        assert.equal(response.statusCode, 401, `${call.method} ${call.url}`);
        assert.equal(response.json().status, 401);
      }
    }
  });

  test('with a valid key, a NUL or a character outside [A-Za-z0-9._-] in the serial or certificate name is 400 {status, msg}', async () => {
    for (const url of ['/v1/dlock/a%00b', '/v1/dlock/a%20b', `/v1/dlock/${'x'.repeat(65)}`, '/v1/certificates/a%00b', '/v1/certificates/a%2Fb']) {
      for (const method of url.startsWith('/v1/dlock/') ? ['GET', 'DELETE'] as const : ['GET'] as const) {
        const response = await t.app.inject({ method, url, headers: bearer(acmeKey) });

        assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
        assert.deepEqual(Object.keys(response.json()).sort(), ['msg', 'status']);
        assert.equal(response.json().status, 400);
      }
    }
  });

  test('the lock key is not in the database in clear', async () => {
    const keys: Buffer[] = [];
    for (let i = 0; i < 3; i++) {
      keys.push(Buffer.from((await post(body())).json().data.key.key, 'base64'));
    }
    const first = (await post(body())).json().data.key;
    keys.push(Buffer.from(first.key, 'base64'));
    await t.app.inject({ method: 'GET', url: `/v1/dlock/${first.data.serial_no}`, headers: bearer(acmeKey) });
    const haystack = await storedBytes(kind, t.db, t.database.dataDir, ['dlocks', 'dlock_secret']);
    assert.ok(haystack.length > 0);
    for (const key of keys.filter((k) => k.length === 16)) {
      assert.equal(haystack.includes(key), false, 'raw bytes');
      for (const text of [key.toString('base64'), key.toString('hex'), key.toString('hex').toUpperCase(), key.toString('base64url')]) {
        assert.equal(haystack.includes(Buffer.from(text)), false, text);
      }
    }
  });
});
