import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadSettings, type Settings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { loadMasterKey, masterKeyFingerprint, MASTER_KEY_FILE, stageMasterKeyFile } from '../../src/secrets/master-key.ts';
import { MISMATCH_RECHECK_MS } from '../../src/secrets/key-ring.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { rotateKeys } from '../../src/secrets/rotate-master-key.ts';
import { buildServer } from '../../src/server.ts';
import { cliChangeSource } from '../../src/cli/context.ts';
import { checkConformance } from '../helpers/conformance.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';

/**
 * Ring timing shortened (the defaults are 5 s and 30 s) so that the test sees, within a
 * second, a server whose ring is too old to seal with: the state a server still on the old
 * master key reaches 30 s after the change.
 */
const RING = { refreshMs: 100, maxAgeMs: 300 };
const JSON_UTF8 = 'application/json; charset=utf-8';

interface Serving {
  app: FastifyInstance;
  db: Db;
  settings: Settings;
  database: TestDatabase;
  headers: Record<string, string>;
  enrol(serial: string): Promise<LightMyRequestResponse>;
  fetchLock(serial: string): Promise<LightMyRequestResponse>;
  /** A test-only route that seals under the ring: a request with the default error shape that needs it. */
  sealProbe(): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** A keyfleet app, as `keyfleet serve` builds it, on a fresh database, with acme's certificate, API key and lock LOCK-1. */
async function serving(database: TestDatabase, env: Record<string, string> = {}): Promise<Serving> {
  const settings = loadSettings({ LOG_LEVEL: 'silent', RATE_LIMIT_API_PER_MINUTE: '0', FLEET_PASS_INTERVAL_MS: '0', ...database.env, ...env });
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  const keyRing = createKeyRing(db, loadMasterKey(settings), RING);
  await keyRing.refresh();
  const app = await buildServer({ settings, db, dialect, keyRing });
  checkConformance(app);
  app.post('/test/seal', { schema: { hide: true } }, async () => ({ sealed: (await app.keyRing.seal('probe', 'probe')).length > 0 }));
  await app.ready();
  await createCustomer(db, 'acme');
  await createIntermediate(db, keyRing, settings, { customer: 'acme', name: 'acme-main' });
  const headers = { authorization: `Bearer ${(await createApiKey(db, { customer: 'acme' })).key}` };
  const enrol = (serial: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/dlock',
      headers,
      payload: { serial_no: serial, type: 'door', certificate: 'acme-main', enrolment_code: '00112233445566778899', base64: false },
    });
  assert.equal((await enrol('LOCK-1')).statusCode, 200);
  return {
    app,
    db,
    settings,
    database,
    headers,
    enrol,
    fetchLock: (serial) => app.inject({ method: 'GET', url: `/v1/dlock/${serial}`, headers }),
    sealProbe: () => app.inject({ method: 'POST', url: '/test/seal' }),
    async close() {
      await app.close();
      await db.destroy();
      await database.drop();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The answer of a request that needs the key ring of a server that does not hold the master key: 503, Retry-After, the route's error shape. */
function assertKeyRingUnavailable(response: LightMyRequestResponse, shape: 'dlock' | 'default', what: string): void {
  assert.equal(response.statusCode, 503, `${what}: ${response.statusCode} ${response.body}`);
  assert.equal(response.headers['content-type'], JSON_UTF8, what);
  assert.match(String(response.headers['retry-after']), /^[1-9][0-9]*$/, `${what}: Retry-After`);
  const body = response.json() as Record<string, unknown>;
  if (shape === 'dlock') {
    assert.deepEqual(Object.keys(body).sort(), ['msg', 'status'], what);
    assert.equal(body.status, 503, what);
    assert.match(String(body.msg), /master key/, what);
  } else {
    assert.deepEqual(Object.keys(body).sort(), ['error_code', 'error_msg'], what);
    assert.equal(body.error_code, 'KEY_RING_UNAVAILABLE', what);
    assert.match(String(body.error_msg), /master key/, what);
  }
  // The fingerprints are for the operator (/readyz, the log), not for every client.
  assert.doesNotMatch(response.body, /[0-9a-f]{16}/, `${what}: no fingerprint in the answer`);
}

forEachDatabase('a server still on the old master key after the CLI changed it', (kind) => {
  test('answers the requests that need the key ring 503 with Retry-After in their route\'s error shape, never 500; /readyz 503', async () => {
    // MASTER_KEY given (always on PostgreSQL; on SQLite too here): a running process cannot be handed the new key.
    const oldKey = randomBytes(32).toString('hex');
    const server = await serving(await createTestDatabase(kind), { MASTER_KEY: oldKey });
    try {
      const newKey = randomBytes(32).toString('hex');
      const rotation = await runKeyfleet({ ...server.database.env, MASTER_KEY: oldKey, NEW_MASTER_KEY: newKey }, 'master-key', 'rotate', '--yes');
      assert.equal(rotation.exitCode, 0, rotation.stderr);
      // Past the ring's age limit: the server may no longer seal with the ring it read before the change.
      await sleep(RING.maxAgeMs + 100);

      for (let round = 0; round < 3; round++) {
        assertKeyRingUnavailable(await server.enrol(`LOCK-NEW-${round}`), 'dlock', `POST /v1/dlock, round ${round}`);
        assertKeyRingUnavailable(await server.fetchLock('LOCK-1'), 'dlock', `GET /v1/dlock/LOCK-1, round ${round}`);
        assertKeyRingUnavailable(await server.sealProbe(), 'default', `POST /test/seal, round ${round}`);
      }
      const ready = await server.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.match(ready.json().error_msg, new RegExp(`database expects master key ${masterKeyFingerprint(Buffer.from(newKey, 'hex'))}`));
      // Requests that do not need the ring are served as before.
      assert.equal((await server.app.inject({ method: 'GET', url: '/v1/certificates/acme-main', headers: server.headers })).statusCode, 200);
    } finally {
      await server.close();
    }
  });
});

test('with the key file (SQLite default), the running server takes the new master key the CLI wrote: requests succeed, /readyz 200', async () => {
  const server = await serving(await createTestDatabase('sqlite'));
  try {
    const newKeyFile = path.join(server.settings.dataDir, 'new.key');
    const newKey = randomBytes(32);
    fs.writeFileSync(newKeyFile, newKey.toString('hex'));
    const rotation = await runKeyfleet(server.database.env, 'master-key', 'rotate', '--new-key-file', newKeyFile, '--yes');
    assert.equal(rotation.exitCode, 0, rotation.stderr);
    await sleep(RING.maxAgeMs + 100);

    const enrolled = await server.enrol('LOCK-2');
    assert.equal(enrolled.statusCode, 200, enrolled.body);
    for (const serial of ['LOCK-1', 'LOCK-2']) {
      const fetched = await server.fetchLock(serial);
      assert.equal(fetched.statusCode, 200, `${serial}: ${fetched.body}`);
    }
    assert.equal((await server.sealProbe()).statusCode, 200);
    assert.equal((await server.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    assert.equal(server.app.keyRing.fingerprint, masterKeyFingerprint(newKey));
  } finally {
    await server.close();
  }
});

test('with the key file, a change that has committed but not yet replaced master.key is picked up from master.key.new', async () => {
  const server = await serving(await createTestDatabase('sqlite'));
  try {
    const newKey = randomBytes(32);
    // The CLI's steps, stopped between the commit and the file's replacement (the reseal runs there).
    stageMasterKeyFile(server.settings.dataDir, newKey);
    await rotateKeys(server.db, createKeyRing(server.db, loadMasterKey(server.settings)), cliChangeSource(), { newMasterKey: { key: newKey, source: 'the new master key' } });
    assert.notEqual(fs.readFileSync(path.join(server.settings.dataDir, MASTER_KEY_FILE), 'utf8'), newKey.toString('hex'));

    const fetched = await server.fetchLock('LOCK-1');
    assert.equal(fetched.statusCode, 200, fetched.body);
    assert.equal(server.app.keyRing.fingerprint, masterKeyFingerprint(newKey));
  } finally {
    await server.close();
  }
});

test('with the key file, a key file that does not hold the key the database expects gives 503, and is read again at most once a second', async () => {
  const server = await serving(await createTestDatabase('sqlite'));
  try {
    // Another process changed the master key and this host's key file was not replaced.
    await rotateKeys(server.db, createKeyRing(server.db, loadMasterKey(server.settings)), cliChangeSource(), { newMasterKey: { key: randomBytes(32), source: 'the new master key' } });
    const keyFile = path.join(server.settings.dataDir, MASTER_KEY_FILE);
    const reads = { count: 0 };
    const readFileSync = fs.readFileSync;
    const counting = ((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (file === keyFile) reads.count++;
      return (readFileSync as (...args: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.readFileSync;
    fs.readFileSync = counting;
    const started = performance.now();
    try {
      for (let round = 0; round < 20; round++) assertKeyRingUnavailable(await server.fetchLock('LOCK-1'), 'dlock', `GET /v1/dlock/LOCK-1, round ${round}`);
    } finally {
      fs.readFileSync = readFileSync;
    }
    // Once, and once more per second the requests took on a slow host.
    const allowed = 1 + Math.floor((performance.now() - started) / MISMATCH_RECHECK_MS);
    assert.ok(reads.count >= 1 && reads.count <= allowed, `the key file was read ${reads.count} times for 20 requests (at most ${allowed})`);
  } finally {
    await server.close();
  }
});
