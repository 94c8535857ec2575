import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

forEachDatabase('rate limits', (kind) => {
  let subject: TestApp;
  before(async () => {
    subject = await buildTestApp(kind, { RATE_LIMIT_DEVICE_PER_MINUTE: '3', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '5', RATE_LIMIT_API_PER_MINUTE: '2' });
  });
  after(() => subject.close());

  const poll = (serial: string, remoteAddress: string) => subject.app.inject({ method: 'GET', url: `/api/v1/config/${serial}`, remoteAddress });

  test('when one OKM polls more often than the device limit, it gets 429 with Retry-After; another OKM behind the same IP does not', async () => {
    const allowed = [await poll('LIMITED-1', '198.51.100.7'), await poll('LIMITED-1', '198.51.100.7'), await poll('LIMITED-1', '198.51.100.7')];

    const limited = await poll('LIMITED-1', '198.51.100.7');
    const otherOkm = await poll('LIMITED-2', '198.51.100.7');

    assert.deepEqual(allowed.map((response) => response.statusCode).sort(), [200, 200, 204]);
    assert.equal(limited.statusCode, 429);
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal(limited.json().error_code, 'TOO_MANY_REQUESTS');
    assert.notEqual(otherOkm.statusCode, 429);
  });

  test('the OKMs behind one address (a NATed chain) share a per-IP ceiling above the per-device limit', async () => {
    const statuses = [];
    for (let okm = 1; okm <= 5; okm++) statuses.push((await poll(`NAT-${okm}`, '198.51.100.20')).statusCode);

    const overCeiling = await poll('NAT-6', '198.51.100.20');
    const otherAddress = await poll('NAT-6', '198.51.100.21');

    assert.deepEqual(new Set(statuses), new Set([204]));
    assert.equal(overCeiling.statusCode, 429);
    assert.equal(otherAddress.statusCode, 204);
  });

  test('the bootstrap, audit intake and firmware download routes are device routes too', async () => {
    const remoteAddress = '198.51.100.30';
    const calls = [
      { method: 'GET', url: '/embeddedv1/kas/config' },
      { method: 'GET', url: '/embeddedv1/kas/config/BOOT-1' },
      { method: 'POST', url: '/api/v1/audit/BOOT-2', payload: {} },
      { method: 'GET', url: '/api/v1/firmware/kas/1.0.0/file' },
      { method: 'GET', url: '/api/v1/firmware/kas/1.0.1/file' },
      { method: 'GET', url: '/embeddedv1/kas/config' },
    ] as const;
    const statuses = [];
    for (const call of calls) statuses.push((await subject.app.inject({ ...call, remoteAddress })).statusCode);

    assert.deepEqual(statuses.slice(0, 5).map((status) => status === 429), [false, false, false, false, false]);
    assert.equal(statuses[5], 429);
  });

  test('requests without a credential are counted per IP: 401 up to the API limit, then 429', async () => {
    const list = (remoteAddress: string) => subject.app.inject({ method: 'GET', url: '/api/v1/okms', remoteAddress });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await list('198.51.100.40')).statusCode);

    const otherAddress = await list('198.51.100.41');

    assert.deepEqual(statuses, [401, 401, 429, 429, 429, 429]);
    assert.equal(otherAddress.statusCode, 401);
  });

  test('requests with a bad credential are counted per IP, however the credential changes, on the JWT and DLock APIs', async () => {
    const calls = [
      (i: number) => ({ method: 'GET', url: '/api/v1/okms', headers: { authorization: `Bearer not-a-token-${i}` } }) as const,
      (i: number) => ({ method: 'GET', url: '/v1/dlock/LOCK-1', headers: { authorization: `Bearer kf_live_${'x'.repeat(20)}${i}` } }) as const,
    ];
    for (const [index, call] of calls.entries()) {
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await subject.app.inject({ ...call(i), remoteAddress: `198.51.100.5${index}` })).statusCode);

      assert.deepEqual(statuses, [401, 401, 429, 429, 429, 429], call(0).url);
    }
  });

  test('API calls are limited per token, not per IP', async () => {
    const first = await issueTestToken(subject, { customer: 'acme', scopes: ['okm:read'] });
    const second = await issueTestToken(subject, { customer: 'acme', scopes: ['okm:read'], ttlSeconds: 1800 });
    const list = (token: string) => subject.app.inject({ method: 'GET', url: '/api/v1/okms', headers: { authorization: `Bearer ${token}` } });

    const statuses = [(await list(first)).statusCode, (await list(first)).statusCode, (await list(first)).statusCode];
    const otherToken = await list(second);

    assert.deepEqual(statuses, [200, 200, 429]);
    assert.equal(otherToken.statusCode, 200);
  });

  test('a limited DLock call answers in the DLock error shape', async () => {
    await createTestCustomer(subject, 'dlock-limits');
    const { key } = await createApiKey(subject.db, { customer: 'dlock-limits' });
    const fetchLock = () => subject.app.inject({ method: 'GET', url: '/v1/dlock/NONE', headers: { authorization: `Bearer ${key}` } });

    const statuses = [(await fetchLock()).statusCode, (await fetchLock()).statusCode];
    const limited = await fetchLock();

    assert.deepEqual(statuses, [404, 404]);
    assert.equal(limited.statusCode, 429);
    assert.deepEqual(Object.keys(limited.json()).sort(), ['msg', 'status']);
  });

  test('probes and metrics are never limited', async () => {
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await subject.app.inject({ method: 'GET', url: '/healthz' })).statusCode);

    assert.deepEqual(new Set(statuses), new Set([200]));
  });
});

forEachDatabase('request size and time limits', (kind) => {
  let subject: TestApp;
  let port: number;
  before(async () => {
    subject = await buildTestApp(kind, { HTTP_HEADERS_TIMEOUT_SECONDS: '1', HTTP_REQUEST_TIMEOUT_SECONDS: '2' });
    await subject.app.listen({ port: 0, host: '127.0.0.1' });
    port = (subject.app.server.address() as net.AddressInfo).port;
  });
  after(() => subject.close());

  test('a DLock enrolment body over 16 KiB is 413 before it is parsed (401 without a key: the key is checked first)', async () => {
    await createTestCustomer(subject, 'big-bodies');
    const { key } = await createApiKey(subject.db, { customer: 'big-bodies' });
    const body = JSON.stringify({ serial_no: 'BIG', type: 'x'.repeat(20_000), certificate: 'c', enrolment_code: '00', base64: false });
    const enrol = (headers: Record<string, string>) =>
      subject.app.inject({ method: 'POST', url: '/v1/dlock', headers: { 'content-type': 'application/json', ...headers }, body });

    const withKey = await enrol({ authorization: `Bearer ${key}` });
    const withoutKey = await enrol({});

    assert.equal(withKey.statusCode, 413);
    assert.equal(withoutKey.statusCode, 401);
  });

  test('a client that sends its headers a byte at a time (slow loris) is cut off after the headers timeout', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const started = Date.now();
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    socket.write('GET /healthz HTTP/1.1\r\nHost: keyfleet\r\n');
    const drip = setInterval(() => socket.writable && socket.write('X-Slow: a\r\n'), 200);

    await closed;
    clearInterval(drip);

    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 900 && elapsed < 4000, `closed after ${elapsed} ms`);
  });
});
