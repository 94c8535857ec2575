import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { customerOwner, DEPLOYMENT_OWNER, rotateWebhookSecret, webhookSecrets } from '../../src/webhooks/secrets.ts';
import { FAST_WEBHOOKS, Receiver, subscribe, testDispatcher, type ReceivedEvent } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';

const headersOf = (event: ReceivedEvent) => ({
  'webhook-id': String(event.headers['webhook-id']),
  'webhook-timestamp': String(event.headers['webhook-timestamp']),
  'webhook-signature': String(event.headers['webhook-signature']),
});

forEachDatabase('status event signatures', (kind) => {
  let subject: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    // A running dispatcher caches secrets for 30 s; here each delivery gets a fresh dispatcher, so it signs with the secrets as just changed.
    subject = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_DISPATCH_IN_SERVER: 'false' });
  });
  after(async () => {
    await subject.close();
    await receiver.close();
  });

  /** Enrols an OKM (of the customer, if any), subscribes it, polls, and delivers its event with a new dispatcher. */
  async function deliverOne(path: string, customerId: number | null): Promise<ReceivedEvent> {
    const serial = newSerial('SIG');
    await poll(subject, serial);
    if (customerId !== null) await subject.db.updateTable('okms').set({ customer_id: customerId }).where('serial_number', '=', serial).execute();
    await subscribe(subject.db, serial, [receiver.url(path)]);
    await poll(subject, serial);
    const dispatcher = testDispatcher(subject);
    dispatcher.start();
    try {
      return (await eventually(() => receiver.eventsAt(path)[0]))!;
    } finally {
      await dispatcher.stop();
    }
  }

  test('an OKM with no customer signs with the deployment secret, verified by the standardwebhooks package', async () => {
    const delivered = await deliverOne('/deployment', null);
    const { current } = await webhookSecrets(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now());

    const verified = new Webhook(current).verify(delivered.body, headersOf(delivered));

    assert.match(current, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(verified, JSON.parse(delivered.body));
  });

  test("a customer's OKM signs with that customer's secret, not the deployment's", async () => {
    const customer = await createTestCustomer(subject, `sig-${process.pid}`);
    const delivered = await deliverOne('/customer', customer.id);
    const own = await webhookSecrets(subject.db, subject.app.keyRing, customerOwner(customer.id), Date.now());
    const deployment = await webhookSecrets(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now());

    assert.ok(new Webhook(own.current).verify(delivered.body, headersOf(delivered)));
    assert.throws(() => new Webhook(deployment.current).verify(delivered.body, headersOf(delivered)));
  });

  test('during a rotation both signatures are sent, so the old and the new secret each verify', async () => {
    const before = await webhookSecrets(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now());
    const rotated = await rotateWebhookSecret(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now(), 3_600_000);

    const delivered = await deliverOne('/rotating', null);

    assert.equal(rotated.previous?.secret, before.current);
    assert.equal(String(delivered.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(new Webhook(before.current).verify(delivered.body, headersOf(delivered)));
    assert.ok(new Webhook(rotated.current).verify(delivered.body, headersOf(delivered)));
  });

  test('a rotation with no overlap signs with the new secret only', async () => {
    const before = await webhookSecrets(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now());
    const rotated = await rotateWebhookSecret(subject.db, subject.app.keyRing, DEPLOYMENT_OWNER, Date.now(), 0);

    const delivered = await deliverOne('/rotated', null);

    assert.equal(String(delivered.headers['webhook-signature']).split(' ').length, 1);
    assert.ok(new Webhook(rotated.current).verify(delivered.body, headersOf(delivered)));
    assert.throws(() => new Webhook(before.current).verify(delivered.body, headersOf(delivered)));
  });
});
