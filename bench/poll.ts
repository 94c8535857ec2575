/**
 * Config-poll benchmark: a bare node:http server answering {} against keyfleet (SQLite, and
 * PostgreSQL when reachable) with 100 000 stored OKMs, under autocannon from this process.
 *
 *   npm run bench:poll -- [--sqlite] [--postgres] [--okms 100000] [--duration 10]
 *                         [--connections 100] [--cpu-prof DIR]
 *
 * With neither --sqlite nor --postgres both run. Everything listens on 127.0.0.1 only, and
 * every server is a child process so that the load generator does not share its event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { Insertable } from 'kysely';
import pg from 'pg';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { OkmsTable } from '../src/db/schema.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../src/okm/model.ts';
import { settingsColumns } from '../src/okm/repository.ts';
import { canonicalDigest } from '../src/shared/canonical-json.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    okms: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    'cpu-prof': { type: 'string' },
  },
});
const OKM_COUNT = Number(options.okms);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const WARM_UP_S = 2;
const POSTGRES_URL = process.env.KEYFLEET_BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
const REPO_ROOT = path.resolve(import.meta.dirname, '..');

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
const serialOf = (index: number) => `OKM-${String(index).padStart(7, '0')}`;

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
const MIX: { share: number; name: string; change: (parameters: Record<string, string>, now: number) => void }[] = [
  { share: 0.88, name: 'in step → {}', change: () => {} },
  { share: 0.04, name: 'clock 10 min off → kasDateTime', change: (p, now) => (p.kasDateTime = String(now - 600_000)) },
  { share: 0.03, name: 'old KAS firmware 2.9.9 → kasFirmware offer', change: (p) => (p.kasFirmware = '2.9.9') },
  // The unconfigured template has no asset list to be stale: those requests stay in step.
  { share: 0.03, name: 'stale asset list digest → assetList (read from the database)', change: (p) => p.assetList && (p.assetList = '0'.repeat(64)) },
  { share: 0.02, name: 'polling interval 300 → pollingInterval', change: (p) => (p.pollingInterval = '300') },
];

const PATH_COUNT = 50_000;

/** Request paths for random existing serials, made just before a run so that kasDateTime is current. */
function requestPaths(configPath: string): string[] {
  const now = Date.now();
  return Array.from({ length: PATH_COUNT }, () => {
    const index = Math.floor(Math.random() * OKM_COUNT);
    const parameters = inSyncParameters(TEMPLATES[index % TEMPLATES.length]!, now);
    let pick = Math.random();
    const kind = MIX.find((entry) => (pick -= entry.share) < 0) ?? MIX[0]!;
    kind.change(parameters, now);
    return `${configPath}/${serialOf(index)}?${new URLSearchParams(parameters)}`;
  });
}

// ---- servers ----

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitUntilServing(url: string, child: ChildProcess): Promise<void> {
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

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  // Requests autocannon left in flight finish first, so that shutdown does not race them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
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

function startBare(port: number): ChildProcess {
  return spawn(process.execPath, ['-e', BARE_SERVER], { env: { ...process.env, PORT: String(port) }, stdio: 'inherit' });
}

function startKeyfleet(port: number, env: Record<string, string>, name: string): ChildProcess {
  // One profile per thread (tsx runs its loader in a worker); the main thread's is the largest.
  const profile = options['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options['cpu-prof'], name)}`] : [];
  return spawn(process.execPath, [...profile, '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
}

// ---- databases ----

const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 10_000;

/** Migrates a fresh database and stores the OKMs and the fleet firmware, in batched inserts inside transactions. */
async function seed(env: Record<string, string>): Promise<void> {
  const settings = loadSettings({ ...env, LOG_LEVEL: 'silent' });
  const { db, dialect } = openDatabase(dialectFor(settings));
  try {
    await migrateToLatest(db, dialect);
    const now = Date.now();
    for (const [kind, version] of Object.entries(FIRMWARE)) {
      await db.insertInto('firmware_releases').values({ kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: 'ab'.repeat(32), size: null, created_at: now }).execute();
      await db.insertInto('fleet_firmware').values({ kind, version }).execute();
    }
    const templateColumns = TEMPLATES.map((template) => settingsColumns(template) as Insertable<OkmsTable>);
    for (let start = 0; start < OKM_COUNT; start += ROWS_PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        for (let batch = start; batch < Math.min(start + ROWS_PER_TRANSACTION, OKM_COUNT); batch += ROWS_PER_INSERT) {
          const rows = Array.from({ length: Math.min(ROWS_PER_INSERT, OKM_COUNT - batch) }, (_, offset) => ({
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
  } finally {
    await db.destroy();
  }
}

async function postgresReachable(): Promise<boolean> {
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

// ---- load ----

interface Figures {
  target: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(port: number, paths: string[], seconds: number) {
  let next = 0;
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  });
}

async function measure(target: string, port: number, paths: string[]): Promise<Figures> {
  await load(port, paths, WARM_UP_S);
  const result = await load(port, paths, DURATION_S);
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
async function observedMix(port: number, paths: string[]): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  for (const requestPath of paths.slice(0, 400)) {
    const body = await (await fetch(`http://127.0.0.1:${port}${requestPath}`)).text();
    const key = body === '{}' ? '{}' : Object.keys(JSON.parse(body) as object)[0]!;
    tally[key] = (tally[key] ?? 0) + 1;
  }
  return tally;
}

async function benchKeyfleet(name: string, env: Record<string, string>): Promise<Figures[]> {
  const seeding = Date.now();
  await seed(env);
  console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
  const port = await freePort();
  const child = startKeyfleet(port, env, name);
  try {
    await waitUntilServing(`http://127.0.0.1:${port}/embeddedv1/kas/config`, child);
    console.log(`${name}: answers seen on a sample of 400 requests:`, await observedMix(port, requestPaths('/api/v1/config')));
    const poll = await measure(`keyfleet ${name}`, port, requestPaths('/api/v1/config'));
    // The bootstrap route does no database work: the framework's share of the cost.
    const bootstrap = await measure(`keyfleet ${name} bootstrap (no database)`, port, requestPaths('/embeddedv1/kas/config'));
    return [poll, bootstrap];
  } finally {
    await stop(child);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const both = !options.sqlite && !options.postgres;
  const figures: Figures[] = [];

  const barePort = await freePort();
  const bare = startBare(barePort);
  try {
    await waitUntilServing(`http://127.0.0.1:${barePort}/`, bare);
    // The same requests as keyfleet gets, so that the load generator's own cost is the same.
    figures.push(await measure('bare node:http', barePort, requestPaths('/api/v1/config')));
  } finally {
    await stop(bare);
  }

  if (options.sqlite || both) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
    try {
      figures.push(...(await benchKeyfleet('sqlite', { DATA_DIR: dataDir })));
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }

  if (options.postgres || both) {
    if (!(await postgresReachable())) {
      if (options.postgres) throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL}`);
      console.log(`postgres: skipped, not reachable at ${POSTGRES_URL}`);
    } else {
      const schema = `bench_${randomBytes(6).toString('hex')}`;
      const url = new URL(POSTGRES_URL);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
      await adminQuery(`CREATE SCHEMA ${schema}`);
      try {
        const env = { DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') };
        figures.push(...(await benchKeyfleet('postgres', env)));
      } finally {
        await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }
  }

  const bareRate = figures[0]!.requestsPerSecond;
  console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs, ${os.cpus().length} CPUs`);
  console.log('mix:', MIX.map((entry) => `${Math.round(entry.share * 100)}% ${entry.name}`).join('; '));
  console.table(
    figures.map((entry) => ({
      target: entry.target,
      'req/s': Math.round(entry.requestsPerSecond),
      'p50 ms': entry.p50,
      'p99 ms': entry.p99,
      'ratio to bare': (entry.requestsPerSecond / bareRate).toFixed(2),
      'non-2xx': entry.non2xx,
      errors: entry.errors,
    })),
  );
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
