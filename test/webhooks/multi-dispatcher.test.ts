import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { dialectFor } from '../../src/db/database.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { Receiver, insertOkmsWithQueuedStatus } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort, spawnKeyfleet, stopProcess, waitUntilServing } from '../helpers/server-process.ts';

const EVENT_COUNT = 1500;

forEachDatabase('two keyfleet dispatch processes on one database', (kind) => {
  let store: TestStore;
  let receiver: Receiver;
  before(async () => {
    store = await openTestStore(kind);
    await migrateToLatest(store.db, dialectFor(store.settings));
    receiver = await Receiver.start();
    receiver.reply = () => ({ status: 200, delayMs: 10 });
  });
  after(async () => {
    await receiver.close();
    await store.close();
  });

  test('share the work: each event is delivered, none twice at the same time', { timeout: 120_000 }, async () => {
    const ports = [await freePort(), await freePort()];
    const env = { ...store.database.env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_TIMEOUT_MS: '5000' };
    const dispatchers = ports.map((port) => spawnKeyfleet(env, 'dispatch', '--metrics-port', String(port)));
    try {
      await Promise.all(dispatchers.map((child, index) => waitUntilServing(`http://127.0.0.1:${ports[index]}/metrics`, child)));
      const serials = Array.from({ length: EVENT_COUNT }, (_, index) => `MULTI-${process.pid}-${index}`);
      await insertOkmsWithQueuedStatus(store.db, serials, (serial) => receiver.url(`/${serial}`));
      const queuedAt = Date.now();

      await eventually(() => new Set(receiver.received.map((entry) => entry.path)).size === EVENT_COUNT, 60_000, 'every event delivered');
      console.log(`${kind}: ${EVENT_COUNT} events delivered by two dispatchers in ${Date.now() - queuedAt} ms`);
      const delivered = await Promise.all(
        ports.map(async (port) => {
          const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          return Number(/^keyfleet_status_events_delivered_total (\d+)$/m.exec(metrics)?.[1]);
        }),
      );
      assert.deepEqual(receiver.concurrentDuplicates, []);
      assert.equal(receiver.received.length, EVENT_COUNT, 'no event was delivered twice');
      assert.ok(delivered.every((count) => count > 0), `deliveries per process: ${delivered.join(', ')}`);
    } finally {
      await Promise.all(dispatchers.map((child) => stopProcess(child)));
    }
  });
});
