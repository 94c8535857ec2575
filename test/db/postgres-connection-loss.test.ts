import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadKeyRing } from '../../src/secrets/load-key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { KEY_SET_MAX_AGE_MS } from '../../src/auth/signing-keys.ts';
import { issueToken } from '../../src/auth/tokens.ts';
import { SESSION_MAX_AGE_MS, startSession, upsertPerson } from '../../src/auth/sessions.ts';
import { buildServer } from '../../src/server.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { POSTGRES_URL, createTestDatabase, unavailableReason } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { relayToPostgres, type Relay } from '../helpers/postgres-relay.ts';

const skip = await unavailableReason('postgres');

describe('PostgreSQL connections that the server drops', { skip }, () => {
  let t: TestApp;
  before(async () => (t = await buildTestApp('postgres')));
  after(() => t.close());

  /** Backend pids of (up to) `count` pooled connections, left idle in the pool. */
  async function idlePooledBackends(count: number): Promise<number[]> {
    const rows = await Promise.all(
      Array.from({ length: count }, () => sql<{ pid: number }>`select pg_backend_pid() as pid from pg_sleep(0.05)`.execute(t.db)),
    );
    return [...new Set(rows.map((result) => result.rows[0]!.pid))];
  }

  async function terminate(pids: number[]): Promise<void> {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
    } finally {
      await admin.end();
    }
  }

  test('when idle pooled connections are terminated (pg_terminate_backend), the process lives on and the next requests succeed', async () => {
    const pids = await idlePooledBackends(4);
    assert.ok(pids.length > 1, `expected several pooled connections, got ${pids.length}`);

    await terminate(pids);
    // The idle clients learn of the termination from their sockets: give them time to emit.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    const poll = await t.app.inject({ method: 'GET', url: `${t.settings.configPath}/OKM-TERMINATED-1` });
    assert.equal(ready.statusCode, 200);
    assert.equal(poll.statusCode, 204);
    const after = await idlePooledBackends(2);
    assert.ok(after.every((pid) => !pids.includes(pid)), 'the pool holds only new connections');
  });
});

/** An app on a fresh schema of the shared PostgreSQL; `editUrl` changes its DATABASE_URL. */
async function appOnFreshSchema(editUrl: (url: URL) => void) {
  const database = await createTestDatabase('postgres');
  const url = new URL(database.env.DATABASE_URL!);
  editUrl(url);
  const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env, DATABASE_URL: url.toString() });
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  const app = await buildServer({ settings, db, dialect, keyRing: await loadKeyRing(createKeyRing(db, loadMasterKey(settings)), settings) });
  await app.ready();
  return {
    app,
    db,
    settings,
    async close() {
      await app.close();
      await db.destroy();
      await database.drop();
    },
  };
}

/** An app reached through a relay; `query` adds DATABASE_URL parameters. */
async function appBehindRelay(relay: Relay, query: Record<string, string> = {}) {
  const subject = await appOnFreshSchema((url) => {
    url.port = String(relay.port);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  });
  return {
    ...subject,
    async close() {
      await subject.close();
      await relay.close();
    },
  };
}

const DLOCK_KEY = `Bearer kf_live_${'0'.repeat(16)}${'A'.repeat(43)}`;

describe('PostgreSQL sessions that the server times out', { skip }, () => {
  test('when idle_session_timeout ends the pooled connections, the process lives on and the next request succeeds', async () => {
    // The timeout is the app's role's setting, made once the app has started: set from the
    // start, a busy host's pauses while the app starts would end the connections it starts on.
    const role = `keyfleet_idle_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create role ${role} login superuser`);
    const backendsOfRole = async () =>
      (await admin.query<{ pid: number }>('select pid from pg_stat_activity where usename = $1', [role])).rows.map((row) => row.pid);
    const { app, db, settings, close } = await appOnFreshSchema((url) => void (url.username = role));
    try {
      await admin.query(`alter role ${role} set idle_session_timeout = 500`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [role]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await app.inject({ method: 'GET', url: `${settings.configPath}/OKM-IDLE` })).statusCode, 204);
      // Several pooled connections, so that some of them sit idle (background work keeps one busy).
      await Promise.all(Array.from({ length: 4 }, () => sql`select pg_sleep(0.05)`.execute(db)));
      const opened = await backendsOfRole();
      assert.ok(opened.length > 1, `expected several pooled connections, got ${opened.length}`);

      await eventually(async () => {
        const now = await backendsOfRole();
        return opened.some((pid) => !now.includes(pid));
      }, 5_000, 'PostgreSQL ended an idle connection');
      await new Promise((resolve) => setTimeout(resolve, 100));

      assert.equal((await app.inject({ method: 'GET', url: `${settings.configPath}/OKM-IDLE` })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    } finally {
      await close();
      await admin.query(`drop role ${role}`);
      await admin.end();
    }
  });
});

describe('a server whose PostgreSQL goes away', { skip }, () => {
  test('when the database is down, requests get a 503 JSON answer in each route family\'s shape at once (a JWT too, whose keys cannot be reread, and a session cookie, whose session cannot), /readyz 503, and /metrics still reports, its queue depth unknown (NaN)', async () => {
    const relay = await relayToPostgres();
    const { app, settings, close } = await appBehindRelay(relay);
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
      const { token } = await issueToken(app.db, app.keyRing, settings, { scopes: ['admin'], ttlSeconds: 3600 });
      await app.db.insertInto('role_bindings').values({ id: 'binding-ops', kind: 'group', value: 'ops', role: 'viewer', customer_id: null, created_at: Date.now(), created_by: 'test' }).execute();
      const identity = { issuer: 'https://idp.example.com', subject: 'pat', email: 'pat@example.com', name: 'Pat', groups: ['ops'], refreshToken: undefined };
      const { secret } = await startSession(app.db, app.keyRing, settings, await upsertPerson(app.db, identity, Date.now()), identity, Date.now());
      const cookies = { keyfleet_session: secret };
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/me', cookies })).statusCode, 200);

      await relay.cut();
      // A token is verified with keys read at most KEY_SET_MAX_AGE_MS ago (a session SESSION_MAX_AGE_MS): let this app's copies age.
      await new Promise((resolve) => setTimeout(resolve, Math.max(KEY_SET_MAX_AGE_MS, SESSION_MAX_AGE_MS) + 100));
      const acls = await app.inject({ method: 'GET', url: '/api/v1/acls?customer=acme', headers: { authorization: `Bearer ${token}` } });
      const bySession = await app.inject({ method: 'GET', url: '/api/v1/me', cookies });
      const started = Date.now();
      const poll = await app.inject({ method: 'GET', url: `${settings.configPath}/OKM-1` });
      const dlock = await app.inject({ method: 'GET', url: '/v1/dlock/LOCK-1', headers: { authorization: DLOCK_KEY } });
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      const metrics = await app.inject({ method: 'GET', url: '/metrics' });
      const elapsed = Date.now() - started;

      assert.equal(poll.statusCode, 503, poll.body);
      assert.deepEqual(Object.keys(poll.json()).sort(), ['error_code', 'error_msg']);
      assert.equal(poll.json().error_code, 'DATABASE_UNAVAILABLE');
      assert.equal(poll.headers['retry-after'], '5');
      assert.equal(dlock.statusCode, 503, dlock.body);
      assert.deepEqual(dlock.json(), { status: 503, msg: poll.json().error_msg });
      assert.equal(ready.statusCode, 503);
      assert.equal(acls.statusCode, 503, acls.body);
      // A session (and a token's revocation) is re-read from the database once a second old: an outage is its 503, not a 401.
      assert.equal(bySession.statusCode, 503, bySession.body);
      assert.equal(bySession.json().error_code, 'DATABASE_UNAVAILABLE');
      assert.equal(metrics.statusCode, 200, metrics.body);
      assert.match(metrics.body, /keyfleet_http_request_duration_seconds/);
      assert.match(metrics.body, /^keyfleet_status_events_queue_depth nan$/im);
      assert.ok(elapsed < 3_000, `four requests took ${elapsed} ms`);
    } finally {
      await close();
    }
  });

  test('when the database stops answering (a partition), requests fail with 503 within the query timeout, and all is well once it answers again', async () => {
    const relay = await relayToPostgres();
    // The partition is not healed within the test's patience: a short client-side timeout.
    const { app, settings, close } = await appBehindRelay(relay, { query_timeout: '1000' });
    try {
      assert.equal((await app.inject({ method: 'GET', url: `${settings.configPath}/OKM-1` })).statusCode, 204);

      relay.silence();
      const started = Date.now();
      const [poll, dlock, ready] = await Promise.all([
        app.inject({ method: 'GET', url: `${settings.configPath}/OKM-1` }),
        app.inject({ method: 'GET', url: '/v1/dlock/LOCK-1', headers: { authorization: DLOCK_KEY } }),
        app.inject({ method: 'GET', url: '/readyz' }),
      ]);
      const elapsed = Date.now() - started;
      relay.heal();

      assert.equal(poll.statusCode, 503, poll.body);
      assert.equal(poll.json().error_code, 'DATABASE_UNAVAILABLE');
      assert.equal(dlock.statusCode, 503, dlock.body);
      assert.equal(ready.statusCode, 503);
      assert.ok(elapsed < 7_000, `the requests took ${elapsed} ms`);
      // Connections opened during the partition never reach the database through this relay: they
      // give up after the connect timeout (5 s), and the pool opens new ones.
      await eventually(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, 8_000, '/readyz 200 after the partition');
      assert.equal((await app.inject({ method: 'GET', url: `${settings.configPath}/OKM-1` })).statusCode, 200);
    } finally {
      await close();
    }
  });
});
