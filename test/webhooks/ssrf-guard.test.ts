import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { request } from 'undici';
import { createDeliveryAgent, isForbiddenAddress } from '../../src/webhooks/ssrf-guard.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { FAST_WEBHOOKS, Receiver, rebindingResolver, subscribe } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';

describe('forbidden destination addresses', () => {
  const forbidden = [
    '127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '100.127.255.255', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::a00:1',
    // documentation (RFC 5737, RFC 3849) and transition (6to4, Teredo) ranges, and the same behind IPv4-mapped IPv6
    '192.0.2.1', '198.51.100.7', '203.0.113.254', '2001:db8::1', '2001:db8:ffff::1', '2002:c000:201::1', '2002::1',
    '2001::1', '2001:0:4136:e378::1', '::ffff:192.0.2.1', '::ffff:c633:6407', '::ffff:203.0.113.9',
    '::a00:1', '100::1', '64:ff9b:1::1', '192.88.99.1',
  ];
  const allowed = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'];

  for (const address of forbidden) test(`${address} is refused`, () => assert.equal(isForbiddenAddress(address), true));
  for (const address of allowed) test(`${address} is allowed`, () => assert.equal(isForbiddenAddress(address), false));
  test('a host name (not an address) is refused', () => assert.equal(isForbiddenAddress('localhost'), true));
});

describe('delivery agent with private networks not allowed', () => {
  let receiver: Receiver;
  const agent = createDeliveryAgent({ allowPrivateNetworks: false, connectionsPerHost: 4, timeoutMs: 2000 });
  before(async () => {
    receiver = await Receiver.start();
  });
  after(async () => {
    await agent.close();
    await receiver.close();
  });

  for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
    test(`refuses http://${host}:<port>, checked on the address connected to`, async () => {
      await assert.rejects(
        request(`http://${host}:${receiver.port}/`, { method: 'POST', dispatcher: agent, body: '{}' }),
        (error: Error) => /private, loopback or link-local/.test(`${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`),
      );
      assert.equal(receiver.received.length, 0);
    });
  }
});

describe('delivery agent against DNS rebinding', () => {
  let receiver: Receiver;
  const agent = createDeliveryAgent({ allowPrivateNetworks: false, connectionsPerHost: 4, timeoutMs: 2000 });
  before(async () => {
    receiver = await Receiver.start();
  });
  after(async () => {
    await agent.close();
    await receiver.close();
  });

  test('when a name passes the resolver check but the connection reaches 127.0.0.1, the request is refused at connect time', async () => {
    const resolver = rebindingResolver('rebinding.test');
    try {
      await assert.rejects(
        request(`http://rebinding.test:${receiver.port}/`, { method: 'POST', dispatcher: agent, body: '{}' }),
        (error: Error) => /127\.0\.0\.1 is a private, loopback or link-local address/.test(`${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`),
      );
    } finally {
      resolver.mock.restore();
    }
    assert.ok(resolver.mock.callCount() >= 1, 'the guard resolved the name through the rebinding resolver');
    assert.equal(receiver.received.length, 0);
  });
});

forEachDatabase('status events to private addresses', (kind) => {
  let subject: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    subject = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  });
  after(async () => {
    await subject.close();
    await receiver.close();
  });

  test('are refused when WEBHOOK_ALLOW_PRIVATE_NETWORKS is false, and the refusal is in the delivery log', async () => {
    const serial = newSerial('SSRF');
    await poll(subject, serial);
    await subscribe(subject.db, serial, [receiver.url('/private')]);

    await poll(subject, serial);

    const failure = await eventually(() =>
      subject.db.selectFrom('status_delivery_failures').selectAll().where('okm_serial', '=', serial).executeTakeFirst(),
    );
    assert.equal(failure.status_code, null);
    assert.match(failure.error, /127\.0\.0\.1 is a private, loopback or link-local address/);
    assert.equal(receiver.received.length, 0);
  });
});

/** Literal private addresses and localhost names: refused at write time, as delivery refuses them. */
const PRIVATE_DESTINATIONS = [
  'http://127.0.0.1/', 'http://10.0.0.1/', 'http://[::1]/', 'http://169.254.169.254/latest/meta-data', 'https://192.168.1.10:8443/x',
  'http://[::ffff:127.0.0.1]/', 'http://2130706433/', 'http://0x7f.1/', 'http://[fd12:3456::1]/', 'http://0.0.0.0/',
  'http://localhost/', 'http://localhost:8080/hook', 'http://LOCALHOST./', 'http://api.localhost/', 'http://100.64.0.1/',
];
const REFUSED = /: private, loopback and link-local addresses are refused \(WEBHOOK_ALLOW_PRIVATE_NETWORKS is false\): \S+ is (loopback|private|link-local|reserved or special-purpose)$/;

forEachDatabase('private destinations at write time', (kind) => {
  let strict: TestApp;
  let lenient: TestApp;
  let tokens: Tokens;
  let lenientTokens: Tokens;
  before(async () => {
    strict = await buildTestApp(kind);
    lenient = await buildTestApp(kind, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    tokens = await issueTokens(strict);
    lenientTokens = await issueTokens(lenient);
  });
  after(async () => {
    await strict.close();
    await lenient.close();
  });

  /** Each answer that is not a 400 naming `field` with the reason. */
  function notRefused(answers: [string, string, LightMyRequestResponse][], field: (index: number) => string): string[] {
    return answers.flatMap(([what, url, response], index) => {
      const message = response.statusCode === 400 ? (response.json().error_msg as string) : '';
      const ok = message.startsWith(`${field(index)}: `) && REFUSED.test(message);
      return ok ? [] : [`${what} ${url}: ${response.statusCode} ${response.body.slice(0, 200)}`];
    });
  }

  test('OKM subscribe_urls.status: PUT creating an OKM, PUT replacing and PATCH refuse a literal private address or localhost with a 400 naming the field; nothing is stored', async () => {
    const existing = uniqueSerial('SSRF');
    await createOkm(strict, tokens.acmeWrite, existing, { subscribe_urls: { status: ['https://hooks.example/okm'] } });
    const answers: [string, string, LightMyRequestResponse][] = [];
    for (const url of PRIVATE_DESTINATIONS) {
      const status = ['https://hooks.example/okm', url];
      const created = uniqueSerial('SSRF');
      answers.push(['PUT (create)', url, await call(strict, 'PUT', `${OKMS}/${created}?customer=acme`, { token: tokens.admin, payload: { subscribe_urls: { status } } })]);
      answers.push(['PUT', url, await call(strict, 'PUT', `${OKMS}/${existing}`, { token: tokens.acmeWrite, payload: { subscribe_urls: { status } } })]);
      answers.push(['PATCH', url, await call(strict, 'PATCH', `${OKMS}/${existing}`, { token: tokens.acmeWrite, payload: { subscribe_urls: { status } } })]);
      assert.equal((await call(strict, 'GET', `${OKMS}/${created}`, { token: tokens.admin })).statusCode, 404, `${url}: the OKM was created`);
    }

    assert.deepEqual(notRefused(answers, () => 'subscribe_urls.status[1]'), []);
    const stored = (await call(strict, 'GET', `${OKMS}/${existing}`, { token: tokens.acmeWrite })).json().data.subscribe_urls;
    assert.deepEqual(stored, { status: ['https://hooks.example/okm'] });
  });

  test('webhook endpoints: creating one, or moving one by PATCH, to a literal private address or localhost is a 400 naming url', async () => {
    const moved = await call(strict, 'POST', '/api/v1/webhook-endpoints', { token: tokens.acmeWrite, payload: { url: 'https://hooks.example/fleet', event_types: ['okm.overdue'] } });
    assert.equal(moved.statusCode, 201, moved.body);
    const answers: [string, string, LightMyRequestResponse][] = [];
    for (const url of PRIVATE_DESTINATIONS) {
      answers.push(['POST', url, await call(strict, 'POST', '/api/v1/webhook-endpoints', { token: tokens.acmeWrite, payload: { url, event_types: ['okm.overdue'] } })]);
      answers.push(['PATCH', url, await call(strict, 'PATCH', `/api/v1/webhook-endpoints/${moved.json().data.id}`, { token: tokens.acmeWrite, payload: { url } })]);
    }

    assert.deepEqual(notRefused(answers, () => 'url'), []);
    const endpoints = (await call(strict, 'GET', '/api/v1/webhook-endpoints', { token: tokens.acmeWrite })).json().data;
    assert.deepEqual(endpoints.map((endpoint: { url: string }) => endpoint.url), ['https://hooks.example/fleet']);
  });

  test('host names other than localhost are taken at write time (delivery checks the address they resolve to)', async () => {
    const serial = uniqueSerial('SSRF');
    const names = ['https://hooks.example/okm', 'http://internal.example:8080/x', 'http://localhost.example/'];

    const okm = await call(strict, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { subscribe_urls: { status: names } } });
    const endpoint = await call(strict, 'POST', '/api/v1/webhook-endpoints', { token: tokens.acmeWrite, payload: { url: 'http://localhost.example/', event_types: ['okm.overdue'] } });

    assert.equal(okm.statusCode, 201, okm.body);
    assert.equal(endpoint.statusCode, 201, endpoint.body);
  });

  test('with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, private addresses and localhost are taken', async () => {
    const serial = uniqueSerial('SSRF');
    const status = ['http://127.0.0.1:9/', 'http://[::1]/', 'http://localhost/', 'http://10.0.0.1/'];

    const okm = await call(lenient, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: lenientTokens.admin, payload: { subscribe_urls: { status } } });
    const patched = await call(lenient, 'PATCH', `${OKMS}/${serial}`, { token: lenientTokens.acmeWrite, payload: { subscribe_urls: { status: ['http://169.254.169.254/'] } } });
    const endpoint = await call(lenient, 'POST', '/api/v1/webhook-endpoints', { token: lenientTokens.acmeWrite, payload: { url: 'http://localhost:8080/', event_types: ['okm.overdue'] } });

    assert.equal(okm.statusCode, 201, okm.body);
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(endpoint.statusCode, 201, endpoint.body);
  });

  test('an OKM that holds a private URL from before keeps it through a PATCH of other fields; delivery still refuses it', async () => {
    const serial = uniqueSerial('SSRF');
    await createOkm(strict, tokens.acmeWrite, serial, { subscribe_urls: { status: ['https://hooks.example/okm'] } });
    await strict.db.updateTable('okms').set({ status_urls: JSON.stringify(['https://hooks.example/okm', 'http://127.0.0.1/old']) }).where('serial_number', '=', serial).execute();

    const response = await call(strict, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 120 } });

    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json().data.subscribe_urls, { status: ['https://hooks.example/okm', 'http://127.0.0.1/old'] });
  });
});
