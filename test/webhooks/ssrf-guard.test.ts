import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { createDeliveryAgent, isForbiddenAddress } from '../../src/webhooks/ssrf-guard.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial, poll } from '../okm/config-helpers.ts';
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
