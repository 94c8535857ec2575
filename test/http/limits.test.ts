import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

forEachDatabase('rate limits', (kind) => {
  let subject: TestApp;
  before(async () => {
    subject = await buildTestApp(kind, { RATE_LIMIT_DEVICE_PER_MINUTE: '3', RATE_LIMIT_API_PER_MINUTE: '2' });
  });
  after(() => subject.close());

  const poll = (remoteAddress: string) => subject.app.inject({ method: 'GET', url: '/api/v1/config/LIMITED-1', remoteAddress });

  test('when one IP polls more often than the device limit, it gets 429 with Retry-After; another IP does not', async () => {
    const allowed = [await poll('198.51.100.7'), await poll('198.51.100.7'), await poll('198.51.100.7')];

    const limited = await poll('198.51.100.7');
    const other = await poll('198.51.100.8');

    assert.deepEqual(allowed.map((response) => response.statusCode).sort(), [200, 200, 204]);
    assert.equal(limited.statusCode, 429);
    assert.match(String(limited.headers['retry-after']), /^\d+$/);
    assert.equal(limited.json().error_code, 'TOO_MANY_REQUESTS');
    assert.notEqual(other.statusCode, 429);
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

  test('a DLock enrolment body over 16 KiB is 413 before it is parsed', async () => {
    const body = JSON.stringify({ serial_no: 'BIG', type: 'x'.repeat(20_000), certificate: 'c', enrolment_code: '00', base64: false });

    const response = await subject.app.inject({ method: 'POST', url: '/v1/dlock', headers: { 'content-type': 'application/json' }, body });

    assert.equal(response.statusCode, 413);
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
