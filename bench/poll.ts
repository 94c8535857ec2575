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
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Insertable } from 'kysely';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import type { OkmsTable } from '../src/db/schema.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../src/okm/model.ts';
import { settingsColumns } from '../src/okm/repository.ts';
import { canonicalDigest } from '../src/shared/canonical-json.ts';
import {
  WARM_UP_S,
  forEachBenchDatabase,
  measure,
  printFigures,
  startBare,
  startKeyfleet,
  stop,
  type BenchDatabase,
  type Figures,
  type Load,
} from './harness.ts';

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

// ---- load ----

function pollLoad(paths: string[]): Load {
  let next = 0;
  return { connections: CONNECTIONS, seconds: DURATION_S, next: () => ({ path: paths[next++ % paths.length]! }) };
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

async function benchKeyfleet(database: BenchDatabase): Promise<Figures[]> {
  const { name, env } = database;
  const seeding = Date.now();
  await seed(env);
  console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
  const { port, child } = await startKeyfleet(env, options['cpu-prof'] && path.join(options['cpu-prof'], name));
  try {
    console.log(`${name}: answers seen on a sample of 400 requests:`, await observedMix(port, requestPaths('/api/v1/config')));
    const poll = await measure(`keyfleet ${name}`, port, pollLoad(requestPaths('/api/v1/config')));
    // The bootstrap route does no database work: the framework's share of the cost.
    const bootstrap = await measure(`keyfleet ${name} bootstrap (no database)`, port, pollLoad(requestPaths('/embeddedv1/kas/config')));
    return [poll, bootstrap];
  } finally {
    await stop(child);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const figures: Figures[] = [];

  const bare = await startBare();
  try {
    // The same requests as keyfleet gets, so that the load generator's own cost is the same.
    figures.push(await measure('bare node:http', bare.port, pollLoad(requestPaths('/api/v1/config'))));
  } finally {
    await stop(bare.child);
  }

  await forEachBenchDatabase(options, async (database) => {
    figures.push(...(await benchKeyfleet(database)));
  });

  console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARM_UP_S} s warm-up, ${OKM_COUNT} OKMs, ${os.cpus().length} CPUs`);
  console.log('mix:', MIX.map((entry) => `${Math.round(entry.share * 100)}% ${entry.name}`).join('; '));
  printFigures(figures, () => figures[0]);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
