import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { issueToken } from '../../src/auth/tokens.ts';
import { loadSettings, type Settings } from '../../src/config/settings.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadKeyRing } from '../../src/secrets/load-key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { POSTGRES_URL, unavailableReason } from '../helpers/databases.ts';
import { OutageLoad, REQUEST_BOUND_MS, assertCleanUnavailable, pause, send, timeUntil, unexpectedAnswers, type Answer, type Family } from '../helpers/outage-load.ts';
import { relayToPostgres, type Relay } from '../helpers/postgres-relay.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';

/**
 * Every kind of database outage made for real, one after another, under a load of polls, ACL
 * creations (customer token), OKM lists (admin token) and DLock reads (API key) against
 * `keyfleet serve`: each request is answered with its success or the documented 503
 * DATABASE_UNAVAILABLE (never a 401 for a valid credential, never a 500, never no answer
 * within the bound); /readyz is 200 again soon after the fault ends; every acknowledged write
 * is stored; the log says so in a few warnings, without stack traces.
 */

/** How long each fault lasts, under load. */
const OUTAGE_MS = 1_500;
/**
 * /readyz must be 200 again this soon after a fault ends. A stall is the slowest: connections
 * opened into it wait for the 5 s connect timeout before the pool opens new ones.
 */
const READY_AGAIN_WITHIN_MS = 7_000;
/** A statement on a stalled connection gives up after this (DATABASE_URL's query_timeout), rather than the default 35 s. */
const QUERY_TIMEOUT_MS = 1_500;
const SERIALS = 8;

interface Fault {
  name: string;
  inject(): Promise<void>;
  heal(): Promise<void>;
  /**
   * The fault fails one write, which may be a background step's rather than the load's (a
   * SQLite lock's BUSY goes to the write that waited first): the load need not see every one;
   * the families' check after all the faults still holds.
   */
  mayMissTheLoad?: boolean;
}

interface Served {
  base: string;
  settings: Settings;
  server: ServerProcess;
}

/** A customer, its tokens and API key, made through the database the server uses; the handle is closed again. */
async function credentialsFor(settings: Settings, customer: string) {
  const { db } = openDatabase(dialectFor(settings));
  try {
    await createCustomer(db, customer);
    const keyRing = await loadKeyRing(createKeyRing(db, loadMasterKey(settings)), settings);
    const { token: customerToken } = await issueToken(db, keyRing, settings, { customer, scopes: ['acl:read', 'acl:create'], ttlSeconds: 600 });
    const { token: adminToken } = await issueToken(db, keyRing, settings, { scopes: ['admin'], ttlSeconds: 600 });
    const { key: apiKey } = await createApiKey(db, { customer });
    return { customerToken, adminToken, apiKey };
  } finally {
    await db.destroy();
  }
}

/**
 * Puts the served app under load, makes each fault in turn for OUTAGE_MS, and asserts the
 * answers; returns the figures of each fault.
 */
async function throughFaults({ base, settings, server }: Served, faults: Fault[], { faultedFamilies, atMost = faults.length }: { faultedFamilies: Family[]; atMost?: number }) {
  const customer = 'faults';
  const serials = Array.from({ length: SERIALS }, (_, index) => `FAULT-${index}`);
  for (const serial of serials) assert.equal((await send('poll', `${base}${settings.configPath}/${serial}`)).status, 204);
  const load = new OutageLoad(base, { serials, configPath: settings.configPath, customer, ...(await credentialsFor(settings, customer)) });
  const figures: Record<string, unknown>[] = [];
  // Faults whose BUSY goes to whichever write waits first (SQLite) are made again, up to
  // `atMost` in all, until every family in faultedFamilies has met one.
  const unfaulted = () => faultedFamilies.filter((family) => !load.answers.some((answer) => answer.family === family && answer.status === 503));
  const faultsMade = [...faults];
  let made = 0;
  while (faultsMade.length < atMost) faultsMade.push(faults.at(-1)!);
  try {
    for (const [index, fault] of faultsMade.entries()) {
      if (index >= faults.length && unfaulted().length === 0) break;
      made += 1;
      await pause(300);
      const before = load.answers.length;
      await fault.inject();
      await pause(OUTAGE_MS);
      await fault.heal();
      const readyAgainMs = await timeUntil(`${base}/readyz`, 200, READY_AGAIN_WITHIN_MS + 2_000);
      await pause(200);
      const during = load.answers.slice(before);
      const count = (predicate: (answer: Answer) => boolean) => during.filter(predicate).length;
      figures.push({
        fault: fault.name,
        requests: during.length,
        answered: count((answer) => answer.status !== 503 && unexpectedAnswers([answer]).length === 0),
        unavailable: count((answer) => answer.status === 503),
        other: count((answer) => unexpectedAnswers([answer]).length > 0),
        slowestMs: Math.max(...during.map((answer) => answer.ms)),
        readyAgainMs,
      });
      assert.ok(readyAgainMs <= READY_AGAIN_WITHIN_MS, `${fault.name}: /readyz 200 only ${readyAgainMs} ms after the fault ended`);
      if (!fault.mayMissTheLoad) assert.ok(during.some((answer) => answer.status === 503), `${fault.name}: the load saw the fault`);
    }
  } finally {
    await load.stop();
  }
  console.log(JSON.stringify({ faults: figures, requests: load.answers.length, aclsAcknowledged: load.acknowledgedAcls.length }));

  const unexpected = unexpectedAnswers(load.answers);
  assert.deepEqual(unexpected.slice(0, 5), [], `${unexpected.length} answers neither 2xx nor 503`);
  for (const answer of load.answers.filter((each) => each.status === 503)) assertCleanUnavailable(answer);
  assert.ok(Math.max(...load.answers.map((answer) => answer.ms)) < REQUEST_BOUND_MS);
  for (const family of faultedFamilies) {
    assert.ok(load.answers.some((answer) => answer.family === family && answer.status === 503), `some ${family} requests met a fault`);
  }

  const { db } = openDatabase(dialectFor(settings));
  try {
    await assertAcknowledgedStored(load.acknowledgedAcls, load.answers, db);
  } finally {
    await db.destroy();
  }
  assert.equal((await send('poll', `${base}/healthz`)).status, 200, 'the same process still serves');
  const output = server.output();
  const warnings = output.split('\n').filter((line) => line.includes('database unavailable'));
  assert.ok(warnings.length > 0 && warnings.length <= 6 * made, `${warnings.length} outage warnings for ${made} faults`);
  assert.doesNotMatch(output, /unhandled error|"stack"/);
}

/** Every acknowledged ACL is stored, and every acknowledged poll's sync time (a poll answers after its write commits). */
async function assertAcknowledgedStored(acls: string[], answers: Answer[], db: Db): Promise<void> {
  const stored = acls.length === 0 ? [] : await db.selectFrom('acls').select('id').where('id', 'in', acls).execute();
  assert.equal(stored.length, acls.length, 'every acknowledged ACL is stored');
  const okms = await db.selectFrom('okm_polls').select(['serial_number', 'last_sync_time']).execute();
  const syncTimes = new Map(okms.map((okm) => [okm.serial_number, Number(okm.last_sync_time)]));
  for (const answer of answers.filter((each) => each.serial && typeof each.status === 'number' && each.status < 300)) {
    assert.ok(syncTimes.get(answer.serial!)! >= answer.startedAt, `the acknowledged poll of ${answer.serial} at ${answer.startedAt} is stored`);
  }
}

const serverEnvironment = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  MASTER_KEY: randomBytes(32).toString('hex'),
  RATE_LIMIT_DEVICE_PER_MINUTE: '0',
  RATE_LIMIT_API_PER_MINUTE: '0',
});

const postgresSkip = await unavailableReason('postgres');

describe('PostgreSQL that refuses, drops or stalls connections', { skip: postgresSkip }, () => {
  /** The app's own role (not a superuser, so that role and database limits apply to it) and database. */
  const name = `kf_faults_${randomBytes(6).toString('hex')}`;
  const away = `${name}_away`;
  let admin: pg.Client;
  let relay: Relay;
  let dataDir: string;
  before(async () => {
    admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`CREATE ROLE ${name} LOGIN`);
    await admin.query(`CREATE DATABASE ${name} OWNER ${name}`);
    relay = await relayToPostgres();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-faults-'));
  });
  after(async () => {
    await relay?.close();
    for (const database of [name, away]) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${name}`);
    await admin.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const terminateBackends = (database: string) =>
    admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
  /**
   * Renames a database that no longer allows connections. A connection that was starting while
   * ALLOW_CONNECTIONS went false may pass its check and appear after the backends were
   * terminated; the rename waits 5 s for it to leave, then fails with 55006 (a session using
   * the database), so the backends are terminated again and the rename tried again, three
   * times at most.
   */
  const renameAlone = async (from: string, to: string) => {
    for (let attempt = 1; ; attempt += 1) {
      await terminateBackends(from);
      try {
        await admin.query(`ALTER DATABASE ${from} RENAME TO ${to}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt === 3) throw error;
      }
    }
  };
  /** Runs `step` every 20 ms until the returned stop is called. */
  const repeatedly = (step: () => unknown) => {
    const timer = setInterval(() => void Promise.resolve(step()).catch(() => {}), 20);
    return () => clearInterval(timer);
  };
  let stopRepeating = () => {};

  const faults: Fault[] = [
    {
      name: 'connections refused (ALLOW_CONNECTIONS false, backends terminated): 55000, 57P01',
      inject: async () => {
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await terminateBackends(name);
      },
      heal: async () => void (await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)),
    },
    {
      name: 'backends terminated again and again, in the middle of transactions: 57P01',
      inject: async () => void (stopRepeating = repeatedly(() => terminateBackends(name))),
      heal: async () => stopRepeating(),
    },
    {
      name: 'database renamed away: 3D000',
      inject: async () => {
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await renameAlone(name, away);
        await admin.query(`ALTER DATABASE ${away} ALLOW_CONNECTIONS true`);
      },
      heal: async () => {
        await admin.query(`ALTER DATABASE ${away} ALLOW_CONNECTIONS false`);
        await renameAlone(away, name);
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      },
    },
    {
      name: 'too many connections for the role: 53300',
      inject: async () => {
        await admin.query(`ALTER ROLE ${name} CONNECTION LIMIT 0`);
        await terminateBackends(name);
      },
      heal: async () => void (await admin.query(`ALTER ROLE ${name} CONNECTION LIMIT -1`)),
    },
    {
      name: 'the role may not log in: 28000',
      inject: async () => {
        await admin.query(`ALTER ROLE ${name} NOLOGIN`);
        await terminateBackends(name);
      },
      heal: async () => void (await admin.query(`ALTER ROLE ${name} LOGIN`)),
    },
    {
      name: 'the network cuts every connection again and again: ECONNRESET',
      inject: async () => void (stopRepeating = repeatedly(() => relay.reset())),
      heal: async () => stopRepeating(),
    },
    {
      name: 'the network stalls (nothing passes either way): timeouts',
      inject: async () => relay.silence(),
      heal: async () => relay.heal(),
    },
  ];

  test('each fault: only successes and clean 503s within the bound, ready again soon after, nothing acknowledged lost, a few warnings and no stack traces', { timeout: 120_000 }, async () => {
    const env = { ...serverEnvironment(dataDir), DATABASE_URL: `postgres://${name}@127.0.0.1:${relay.port}/${name}?query_timeout=${QUERY_TIMEOUT_MS}` };
    const settings = loadSettings({ ...env, DATABASE_URL: `postgres://${name}@${new URL(POSTGRES_URL).host}/${name}`, LOG_LEVEL: 'silent' });
    const server = serveProcess(env);
    try {
      await throughFaults({ base: await server.listening, settings, server }, faults, { faultedFamilies: ['poll', 'acl', 'okms', 'dlock'] });
      assert.equal(await server.stop(), 0);
    } finally {
      stopRepeating();
      server.kill('SIGKILL');
    }
  });
});

/** Holds an exclusive lock on a SQLite database file from another process for `ms`; resolves once the lock is taken. */
function lockFromAnotherProcess(file: string, ms: number): Promise<{ released: Promise<void> }> {
  const script = `
    const Database = require(${JSON.stringify(packagePath('better-sqlite3'))});
    const db = new Database(${JSON.stringify(file)});
    db.pragma('busy_timeout = 10000');
    db.exec('BEGIN EXCLUSIVE');
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const released = new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the lock holder exited with ${code}`)))));
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve({ released }));
    child.once('exit', (code) => reject(new Error(`the lock holder exited with ${code} before it locked`)));
  });
}

function packagePath(name: string): string {
  return path.join(path.resolve(import.meta.dirname, '../../node_modules'), name);
}

/** Past SQLite's busy_timeout (5 s): writes give up with SQLITE_BUSY. */
const SQLITE_LOCK_MS = 6_500;

describe('SQLite whose file another process holds locked', () => {
  let dataDir: string;
  before(() => void (dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-faults-'))));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test('a lock held past busy_timeout: only successes and clean 503s within the bound, ready again soon after, nothing acknowledged lost', { timeout: 300_000 }, async () => {
    const env = serverEnvironment(dataDir);
    const settings = loadSettings({ ...env, LOG_LEVEL: 'silent' });
    const server = serveProcess(env);
    let lock: { released: Promise<void> } | undefined;
    const fault: Fault = {
      name: `the database file locked by another process for ${SQLITE_LOCK_MS} ms: SQLITE_BUSY`,
      inject: async () => void (lock = await lockFromAnotherProcess(path.join(dataDir, 'keyfleet.sqlite'), SQLITE_LOCK_MS)),
      heal: async () => lock?.released,
      mayMissTheLoad: true,
    };
    try {
      // Readers go on under another process's write lock (WAL): only the writes meet the fault.
      // The driver waits for the lock synchronously, so whichever write comes first holds the
      // event loop while the rest queue behind it, and the background steps (chaining the
      // audit trail, the fleet pass) write too: one lock gives its BUSY to the one write that
      // waited first, of either family or of a background step. The lock is made again (at most
      // twenty times) until both request families have met it: alone, this test needs two to
      // seven; beside the rest of the suite, polls once took the BUSY of all of twelve (17 to 0).
      await throughFaults({ base: await server.listening, settings, server }, [fault, fault], { faultedFamilies: ['poll', 'acl'], atMost: 20 });
      assert.equal(await server.stop(), 0);
    } finally {
      server.kill('SIGKILL');
    }
  });
});
