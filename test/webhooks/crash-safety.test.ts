import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { Receiver, subscribe } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort, spawnKeyfleet, stopProcess, waitUntilServing } from '../helpers/server-process.ts';

const OKM_COUNT = 30;

forEachDatabase('status events across a crash', (kind) => {
  let store: TestStore;
  let receiver: Receiver;
  before(async () => {
    store = await openTestStore(kind);
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver.close();
    await store.close();
  });

  test('kill -9 of keyfleet serve while events are pending: after a restart every event is delivered', { timeout: 120_000 }, async () => {
    let down = true;
    receiver.reply = () => ({ status: down ? 503 : 200 });
    const port = await freePort();
    const env = {
      ...store.database.env,
      PORT: String(port),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_RETRY_SCHEDULE: Array(20).fill('500ms').join(','),
    };
    const base = `http://127.0.0.1:${port}`;
    const serials = Array.from({ length: OKM_COUNT }, (_, index) => `CRASH-${process.pid}-${index}`);
    let server = spawnKeyfleet(env, 'serve');
    try {
      await waitUntilServing(`${base}/embeddedv1/kas/config`, server);
      for (const serial of serials) assert.equal((await fetch(`${base}/api/v1/config/${serial}`)).status, 204);
      for (const serial of serials) await subscribe(store.db, serial, [receiver.url(`/${serial}`)]);

      const replies = await Promise.all(serials.map((serial) => fetch(`${base}/api/v1/config/${serial}?kasFirmware=9.9.9`)));
      assert.ok(replies.every((reply) => reply.status === 200));
      await eventually(() => receiver.received.length >= OKM_COUNT, 10_000, 'first attempts');
      await stopProcess(server, 'SIGKILL');
      down = false;
      server = spawnKeyfleet(env, 'serve');
      await waitUntilServing(`${base}/embeddedv1/kas/config`, server);

      await eventually(
        () => serials.every((serial) => receiver.eventsAt(`/${serial}`).some((entry) => entry.status === 200 && entry.event.data.firmware_version === '9.9.9')),
        60_000,
        'every event delivered after the restart',
      );
    } finally {
      await stopProcess(server);
    }
  });
});
