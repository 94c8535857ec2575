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
import { FAST_WEBHOOKS, Receiver, insertOkmsWithQueuedStatus, type Reply } from '../webhooks/helpers.ts';

const WAITING_EVENTS = 40;

const skip = await unavailableReason('postgres');

interface Outage {
  /** The database's query timeout, in DATABASE_URL. */
  queryTimeoutMs: number;
  /** How long a delivery may wait for its answer. */
  webhookTimeoutMs: number;
  /**
   * The pooled connections are reset before the partition, so that every try of the database
   * opens a new connection and costs its timeout (5 s): no try can fail faster on a pooled one.
   */
  noPooledConnections: boolean;
}

/**
 * Starts a dispatcher on PostgreSQL through a relay, with WAITING_EVENTS events for a receiver
 * that answers as `reply` says (eight at a time), silences the relay once the first has
 * arrived, and answers how long the dispatcher's stop took.
 */
async function stopWithoutDatabase(outage: Outage, reply: (received: number) => Reply): Promise<number> {
  const relay = await relayToPostgres();
  const receiver = await Receiver.start();
  receiver.reply = () => reply(receiver.received.length);
  // Closed whatever fails: a relay or receiver left open keeps the test file's process alive.
  try {
    const database = await createTestDatabase('postgres');
    const url = new URL(database.env.DATABASE_URL!);
    url.port = String(relay.port);
    url.searchParams.set('query_timeout', String(outage.queryTimeoutMs));
    const settings = loadSettings({
      ...FAST_WEBHOOKS,
      WEBHOOK_TIMEOUT_MS: String(outage.webhookTimeoutMs),
      LOG_LEVEL: 'silent',
      WEBHOOK_CONCURRENCY_PER_HOST: '8',
      ...database.env,
      DATABASE_URL: url.toString(),
    });
    // Migrated on a direct connection: through the relay, a short query timeout could fail the
    // migration lock on a busy host, before the cleanup below.
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
      // Eight deliveries are under way (eight per host at a time); the others claimed wait in its lane.
      await eventually(() => receiver.received.length > 0, 10_000, 'a delivery under way');

      if (outage.noPooledConnections) {
        relay.reset();
        await eventually(() => dialect.poolState()?.total === 0, 5_000, 'the pooled connections closed');
      }
      relay.silence();
      const stopping = Date.now();
      await dispatcher.stop();
      return Date.now() - stopping;
    } finally {
      await app.close();
      await db.destroy();
      await database.drop();
    }
  } finally {
    await relay.close();
    await receiver.close();
  }
}

describe('a dispatcher stopped while PostgreSQL does not answer', { skip }, () => {
  test('stops within seconds, leaving the claims of the rows it had not started to lapse', { timeout: 60_000 }, async () => {
    const stopMs = await stopWithoutDatabase({ queryTimeoutMs: 300, webhookTimeoutMs: 500, noPooledConnections: false }, () => ({ status: 200, hang: true }));
    // The deliveries under way end at their 500 ms timeout; then one database timeout, a query's
    // (300 ms) or a new connection's (5 s), for their outcomes, not one per waiting row.
    assert.ok(stopMs < 10_000, `stopping took ${stopMs} ms`);
  });

  test('tries the database once for the outcomes: a second batch of them does not wait out a second connection timeout', { timeout: 60_000 }, async () => {
    // The first delivery is answered 500 ms after it arrived, and its outcome written alone; the
    // other seven end at their timeout, 1.5 s after they arrived, and make a second batch that
    // waits for the first. Each try of the database costs a new connection's timeout, 5 s.
    const stopMs = await stopWithoutDatabase({ queryTimeoutMs: 300, webhookTimeoutMs: 1_500, noPooledConnections: true }, (received) =>
      received === 1 ? { status: 200, delayMs: 500 } : { status: 200, hang: true },
    );
    // One try: about 5.5 s; a second try, for the second batch, would take it past 10 s.
    assert.ok(stopMs < 8_000, `stopping took ${stopMs} ms`);
  });
});
