/**
 * Pieces the load benchmarks share: the benchmark fleet and its request mix, child-process
 * servers (keyfleet, a bare node:http server), fresh databases, and autocannon measurement.
 * Everything listens on 127.0.0.1 only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import type { Insertable } from 'kysely';
import pg from 'pg';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { OkmsTable } from '../src/db/schema.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../src/okm/model.ts';
import { settingsColumns } from '../src/okm/repository.ts';
import { canonicalDigest } from '../src/shared/canonical-json.ts';

export const POSTGRES_URL = process.env.KEYFLEET_BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const REPO_ROOT = path.resolve(import.meta.dirname, '..');

// ---- the fleet: a few configuration templates, OKM i uses template i % TEMPLATES.length ----

const FIRMWARE = { kas: '2.10.0', batch_key: '1.2', wireless_key: '3.0' } as const;

function configuredTemplate(index: number): OkmSettings {
  const locks = Array.from({ length: 4 + index }, (_, n) => `LOCK-${index}-${String(n).padStart(3, '0')}`);
  const users = Array.from({ length: 10 + 3 * index }, (_, n) => ({
    user_id: 100_000 + n,
    pin_hash: randomBytes(16).toString('hex'),
    auth_time: 8,
    sounder: false,
    permissions: locks.map((_, lock) => (lock % 3 === 0 ? 17 : 1)),
  }));
  return {
    ...UNCONFIGURED_OKM,
    cacheMode: 2,
    keyCheckoutWindow: { time: 30, contact: 'closed' },
    auditingEnabled: true,
    assetList: locks,
    usersAssets: users,
    pollingInterval: 60,
  };
}

/** Seven configured templates (lists of 4–10 locks and 10–28 users) and one unconfigured OKM. */
const TEMPLATES: OkmSettings[] = [...Array.from({ length: 7 }, (_, index) => configuredTemplate(index)), UNCONFIGURED_OKM];
export const serialOf = (index: number) => `OKM-${String(index).padStart(7, '0')}`;

/** The query string of a device in step with its template. */
function inSyncParameters(template: OkmSettings, now: number): Record<string, string> {
  return {
    kasFirmware: FIRMWARE.kas,
    kasDateTime: String(now),
    retailCfg: template.auditingEnabled ? '2' : '1',
    configUrl: '/api/v1/config',
    auditUrl: '/api/v1/audit',
    ...(template.assetList ? { assetList: canonicalDigest(template.assetList) } : {}),
    ...(template.usersAssets ? { usersAssets: canonicalDigest(template.usersAssets) } : {}),
    batchKeyFirmware: FIRMWARE.batch_key,
    wirelessKeyFirmware: FIRMWARE.wireless_key,
    ...(template.keyCheckoutWindow
      ? { keyCheckoutWindowTime: String(template.keyCheckoutWindow.time), keyCheckoutWindowContact: template.keyCheckoutWindow.contact }
      : {}),
    installCode: '12345678',
    cacheMode: String(template.cacheMode ?? 1),
    pollingInterval: String(template.pollingInterval ?? 150),
  };
}

/**
 * The request mix, by share of requests: most devices are in step and get {}; the others
 * have one difference each and get one correction.
 */
export const MIX: { share: number; name: string; change: (parameters: Record<string, string>, now: number) => void }[] = [
  { share: 0.88, name: 'in step → {}', change: () => {} },
  { share: 0.04, name: 'clock 10 min off → kasDateTime', change: (p, now) => (p.kasDateTime = String(now - 600_000)) },
  { share: 0.03, name: 'old KAS firmware 2.9.9 → kasFirmware offer', change: (p) => (p.kasFirmware = '2.9.9') },
  // The unconfigured template has no asset list to be stale: those requests stay in step.
  { share: 0.03, name: 'stale asset list digest → assetList (read from the database)', change: (p) => p.assetList && (p.assetList = '0'.repeat(64)) },
  { share: 0.02, name: 'polling interval 300 → pollingInterval', change: (p) => (p.pollingInterval = '300') },
];

const PATH_COUNT = 50_000;

/** Request paths for random existing serials, made just before a run so that kasDateTime is current. */
export function requestPaths(configPath: string, okmCount: number): string[] {
  const now = Date.now();
  return Array.from({ length: PATH_COUNT }, () => {
    const index = Math.floor(Math.random() * okmCount);
    const parameters = inSyncParameters(TEMPLATES[index % TEMPLATES.length]!, now);
    let pick = Math.random();
    const kind = MIX.find((entry) => (pick -= entry.share) < 0) ?? MIX[0]!;
    kind.change(parameters, now);
    return `${configPath}/${serialOf(index)}?${new URLSearchParams(parameters)}`;
  });
}

const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 10_000;

/** Opens the database of `env` (settings as keyfleet reads them), for a benchmark's own reads and writes. */
export async function withDb<T>(env: Record<string, string>, use: (db: Db) => Promise<T>): Promise<T> {
  const settings = loadSettings({ ...env, LOG_LEVEL: 'silent' });
  const { db, dialect } = openDatabase(dialectFor(settings));
  try {
    await migrateToLatest(db, dialect);
    return await use(db);
  } finally {
    await db.destroy();
  }
}

/** Migrates a fresh database and stores the fleet's OKMs and firmware, in batched inserts inside transactions. */
export async function seedFleet(env: Record<string, string>, okmCount: number): Promise<void> {
  await withDb(env, async (db) => {
    const now = Date.now();
    for (const [kind, version] of Object.entries(FIRMWARE)) {
      await db.insertInto('firmware_releases').values({ kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: 'ab'.repeat(32), size: null, created_at: now }).execute();
      await db.insertInto('fleet_firmware').values({ kind, version }).execute();
    }
    const templateColumns = TEMPLATES.map((template) => settingsColumns(template) as Insertable<OkmsTable>);
    for (let start = 0; start < okmCount; start += ROWS_PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        for (let batch = start; batch < Math.min(start + ROWS_PER_TRANSACTION, okmCount); batch += ROWS_PER_INSERT) {
          const rows = Array.from({ length: Math.min(ROWS_PER_INSERT, okmCount - batch) }, (_, offset) => ({
            ...templateColumns[(batch + offset) % TEMPLATES.length]!,
            serial_number: serialOf(batch + offset),
            customer_id: null,
            created_at: now,
            updated_at: now,
          }));
          await trx.insertInto('okms').values(rows).execute();
        }
      });
    }
  });
}

// ---- servers ----

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitUntilServing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within 30 s`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  // Requests autocannon left in flight finish first, so that shutdown does not race them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** A node script run as a child process with these environment variables added (a bare server, a webhook receiver). */
export function startScript(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['-e', script], { env: { ...process.env, ...env }, stdio: 'inherit' });
}

const BARE_SERVER = `
require('node:http')
  .createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end('{}');
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

export const startBare = (port: number) => startScript(BARE_SERVER, { PORT: String(port) });

export interface KeyfleetProcessOptions {
  /** Write V8 CPU profiles of the process into this directory. */
  cpuProfileDir?: string;
  /** The keyfleet command; default serve. */
  args?: string[];
}

export function startKeyfleet(port: number, env: Record<string, string>, options: KeyfleetProcessOptions = {}): ChildProcess {
  // One profile per thread (tsx runs its loader in a worker); the main thread's is the largest.
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.cpuProfileDir)}`] : [];
  return spawn(process.execPath, [...profile, '--import', 'tsx', 'src/cli/main.ts', ...(options.args ?? ['serve'])], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
}

// ---- databases ----

export async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export type DatabaseKind = 'sqlite' | 'postgres';

/**
 * Runs `use` with the settings of a fresh database of that kind (a temporary DATA_DIR; for
 * PostgreSQL also a fresh schema), removed afterwards. Undefined when PostgreSQL is not
 * reachable and not required.
 */
export async function withFreshDatabase<T>(kind: DatabaseKind, required: boolean, use: (env: Record<string, string>) => Promise<T>): Promise<T | undefined> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
  try {
    if (kind === 'sqlite') return await use({ DATA_DIR: dataDir });
    if (!(await postgresReachable())) {
      if (required) throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL}`);
      console.log(`postgres: skipped, not reachable at ${POSTGRES_URL}`);
      return undefined;
    }
    const schema = `bench_${randomBytes(6).toString('hex')}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    await adminQuery(`CREATE SCHEMA ${schema}`);
    try {
      return await use({ DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') });
    } finally {
      await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- load ----

export interface LoadOptions {
  connections: number;
  warmUpSeconds: number;
  seconds: number;
}

export interface Figures {
  target: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(port: number, paths: string[], connections: number, seconds: number) {
  let next = 0;
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  });
}

/** autocannon on `paths` in turn: a warm-up, then the measured run. */
export async function measure(target: string, port: number, paths: string[], options: LoadOptions): Promise<Figures> {
  await load(port, paths, options.connections, options.warmUpSeconds);
  const result = await load(port, paths, options.connections, options.seconds);
  return {
    target,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** What the mix really gets back: a sample of the paths, asked one by one. */
export async function observedMix(port: number, paths: string[]): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  for (const requestPath of paths.slice(0, 400)) {
    const body = await (await fetch(`http://127.0.0.1:${port}${requestPath}`)).text();
    const key = body === '{}' ? '{}' : Object.keys(JSON.parse(body) as object)[0]!;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}
