import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing, SEALED_COLUMNS } from '../../src/key-ring.ts';
import { countSealedNotUnder } from '../../src/secrets/reseal.ts';
import { RETIRE_AFTER_MS, retirePreviousKey } from '../../src/secrets/rotate-master-key.ts';
import { buildServer } from '../../src/server.ts';
import { cliChangeSource } from '../../src/cli/context.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestDatabase } from '../helpers/databases.ts';

/**
 * Ring timing (the defaults are 5 s and 30 s), shortened so the test sees both servers pick a
 * rotation up, and different so that for a while one seals under the new key while the other
 * still holds the old ring: it must open the new key's values at once, and its own values,
 * still sealed under the previous key, must stay readable.
 */
const FAST_RING = { refreshMs: 200, maxAgeMs: 1_000 };
const SLOW_RING = { refreshMs: 2_500, maxAgeMs: 2_500 };
const WORKERS_PER_SERVER = 3;

interface Server {
  app: FastifyInstance;
  db: Db;
  close(): Promise<void>;
}

/** One keyfleet process: its own connection and its own key ring. */
async function startServer(env: Record<string, string>, timing = FAST_RING): Promise<Server> {
  const settings = loadSettings({ LOG_LEVEL: 'silent', RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_API_PER_MINUTE: '0', ...env });
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  const keyRing = createKeyRing(db, loadMasterKey(settings), timing);
  await keyRing.refresh();
  const app = await buildServer({ settings, db, dialect, keyRing });
  await app.ready();
  return { app, db, close: async () => (await app.close(), await db.destroy()) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

forEachDatabase('master key rotation under DLock load', (kind) => {
  test('two servers enrol and fetch locks while the CLI rotates and the previous key is retired: no errors, every lock readable after a restart', async (t) => {
    const database = await createTestDatabase(kind);
    const servers = [await startServer(database.env, FAST_RING), await startServer(database.env, SLOW_RING)];
    const [first, second] = servers as [Server, Server];
    await createCustomer(first.db, 'acme');
    await createIntermediate(first.db, first.app.keyRing, first.app.settings, { customer: 'acme', name: 'acme-main' });
    const apiKey = (await createApiKey(first.db, { customer: 'acme' })).key;
    const headers = { authorization: `Bearer ${apiKey}` };

    const keys = new Map<string, string>();
    const errors: string[] = [];
    let fetched = 0;
    let stopped = false;
    const worker = async (name: string, own: Server, other: Server) => {
      for (let n = 0; !stopped; n++) {
        const serial = `LOAD-${name}-${n}`;
        const enrolled = await own.app.inject({
          method: 'POST',
          url: '/v1/dlock',
          headers,
          payload: { serial_no: serial, type: 'door', certificate: 'acme-main', enrolment_code: '00112233445566778899', base64: false },
        });
        if (enrolled.statusCode !== 200) {
          errors.push(`POST ${serial}: ${enrolled.statusCode} ${enrolled.body}`);
          continue;
        }
        keys.set(serial, enrolled.json().data.key.key);
        const serials = [...keys.keys()];
        const sample = serials[Math.floor(Math.random() * serials.length)]!;
        const read = await other.app.inject({ method: 'GET', url: `/v1/dlock/${sample}`, headers });
        fetched++;
        if (read.statusCode !== 200 || read.json().data.key.key !== keys.get(sample)) errors.push(`GET ${sample}: ${read.statusCode} ${read.body}`);
      }
    };
    const load = Array.from({ length: WORKERS_PER_SERVER }, (_, i) => [worker(`A${i}`, first, second), worker(`B${i}`, second, first)]).flat();

    try {
      await sleep(500);
      const rotation = await runKeyfleet(database.env, 'master-key', 'rotate', '--yes', '--json');
      assert.equal(rotation.exitCode, 0, rotation.stderr);
      const { data_key: kid, resealed } = JSON.parse(rotation.stdout) as { data_key: string; resealed: Record<string, number> };
      assert.ok(resealed['dlocks.key_sealed']! > 0, 'the rotation resealed locks enrolled under the load');
      // Past the servers' longest ring age (and a margin for requests in flight), none seals
      // under the previous key any longer.
      await sleep(SLOW_RING.maxAgeMs + 1_500);
      const retirer = createKeyRing(first.db, loadMasterKey(first.app.settings));
      await retirePreviousKey(first.db, retirer, cliChangeSource(), Date.now() + RETIRE_AFTER_MS);
      const enrolledBeforeRetirement = keys.size;
      await sleep(500);
      stopped = true;
      await Promise.all(load);

      assert.deepEqual(errors, []);
      assert.ok(keys.size > enrolledBeforeRetirement, 'enrolments went on after the retirement');
      assert.equal(await countSealedNotUnder(first.db, SEALED_COLUMNS, kid), 0);
      await Promise.all(servers.map((server) => server.close()));

      const restarted = await startServer(database.env);
      try {
        const unreadable: string[] = [];
        for (const [serial, key] of keys) {
          const read = await restarted.app.inject({ method: 'GET', url: `/v1/dlock/${serial}`, headers });
          if (read.statusCode !== 200 || read.json().data.key.key !== key) unreadable.push(`${serial}: ${read.statusCode}`);
        }
        assert.deepEqual(unreadable, []);
        t.diagnostic(`${keys.size} locks enrolled and ${fetched} fetched across the rotation (${resealed['dlocks.key_sealed']} lock keys resealed by it) and the retirement, 0 errors; all ${keys.size} readable after a restart`);
      } finally {
        await restarted.close();
      }
    } finally {
      stopped = true;
      await Promise.allSettled(load);
      await Promise.allSettled(servers.map((server) => server.close()));
      await database.drop();
    }
  });
});
