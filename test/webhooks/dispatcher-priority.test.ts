import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { FAST_WEBHOOKS, Receiver, subscribe, testDispatcher } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';

const EVENTS = 60;
const PER_HOST = 2;

forEachDatabase('status event dispatcher yielding to a busy server', (kind) => {
  let subject: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    subject = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_DISPATCH_IN_SERVER: 'false', WEBHOOK_CONCURRENCY_PER_HOST: String(PER_HOST) });
  });
  after(async () => {
    await subject.close();
    await receiver.close();
  });

  test('while the server is busy, deliveries come one lane-full per host per idle check; once it is not, the rest drain', async () => {
    for (let index = 0; index < EVENTS; index++) {
      const serial = newSerial('BUSY');
      await poll(subject, serial);
      await subscribe(subject.db, serial, [receiver.url('/busy')]);
      await poll(subject, serial);
    }
    let busy = true;
    const dispatcher = testDispatcher(subject, { serverBusy: () => busy });

    dispatcher.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const whileBusy = receiver.eventsAt('/busy').length;
      busy = false;
      dispatcher.wake();
      await eventually(() => receiver.eventsAt('/busy').length >= EVENTS, 10_000, 'all events delivered');

      // An idle check every 250 ms, each claiming at most PER_HOST rows: about 4 checks in a second.
      assert.ok(whileBusy >= 1 && whileBusy <= PER_HOST * 5, `${whileBusy} delivered while busy`);
      assert.equal(new Set(receiver.eventsAt('/busy').map((entry) => entry.event.data.serial_number)).size, EVENTS);
    } finally {
      await dispatcher.stop();
    }
  });
});
