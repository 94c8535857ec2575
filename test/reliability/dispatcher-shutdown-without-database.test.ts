import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadKeyRing } from '../../src/secrets/load-key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { registerStatusEventMetrics } from '../../src/webhooks/metrics.ts';
import { buildServer } from '../../src/server.ts';
import { createTestDatabase, unavailableReason } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { relayToPostgres } from '../helpers/postgres-relay.ts';
import { FAST_WEBHOOKS, Receiver, insertOkmsWithQueuedStatus } from '../webhooks/helpers.ts';

const WAITING_EVENTS = 40;

const skip = await unavailableReason('postgres');

describe('a dispatcher stopped while PostgreSQL does not answer', { skip }, () => {
  test('stops within seconds, leaving the claims of the rows it had not started to lapse', { timeout: 60_000 }, async () => {
    const relay = await relayToPostgres();
    const receiver = await Receiver.start();
    receiver.reply = () => ({ status: 200, hang: true });
    // Closed whatever fails: a relay or receiver left open keeps the test file's process alive.
    try {
    const database = await createTestDatabase('postgres');
    const url = new URL(database.env.DATABASE_URL!);
    url.port = String(relay.port);
    url.searchParams.set('query_timeout', '300');
    const settings = loadSettings({ ...FAST_WEBHOOKS, LOG_LEVEL: 'silent', WEBHOOK_CONCURRENCY_PER_HOST: '8', ...database.env, DATABASE_URL: url.toString() });
    // Migrated on a direct connection: through the relay, the 300 ms query timeout the test
    // needs for its stop could fail the migration lock on a busy host, before the cleanup below.
    const direct = openDatabase(dialectFor(loadSettings({ LOG_LEVEL: 'silent', ...database.env })));
    await migrateToLatest(direct.db, direct.dialect);
    await direct.db.destroy();
    const { db, dialect } = openDatabase(dialectFor(settings));
    const app = await buildServer({ settings, db, dialect, keyRing: await loadKeyRing(createKeyRing(db, loadMasterKey(settings)), settings) });
    const dispatcher = createDispatcher({
      db,
      dialect,
      keyRing: app.keyRing,
      settings,
      metrics: registerStatusEventMetrics(new Registry(), async () => 0),
      log: app.log,
    });
    try {
      const serials = Array.from({ length: WAITING_EVENTS }, (_, index) => `SHUTDOWN-${index}`);
      await insertOkmsWithQueuedStatus(db, serials, (serial) => receiver.url(`/${serial}`));
      dispatcher.start();
      // Eight deliveries hang at the receiver (eight per host at a time); the others claimed wait in its lane.
      await eventually(() => receiver.received.length > 0, 10_000, 'a delivery under way');

      relay.silence();
      const stopping = Date.now();
      await dispatcher.stop();
      const stopMs = Date.now() - stopping;

      // One connection timeout (5 s) for the outcome of the delivery under way, not one per waiting row.
      assert.ok(stopMs < 10_000, `stopping took ${stopMs} ms`);
    } finally {
      await app.close();
      await db.destroy();
      await database.drop();
    }
    } finally {
      await relay.close();
      await receiver.close();
    }
  });
});
