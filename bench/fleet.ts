/**
 * The benchmark fleet that bench/poll.ts and bench/events.ts load: a few configuration
 * templates (OKM i uses template i % TEMPLATES.length), its seeding, and the config-poll
 * request mix.
 */
import { createHash } from 'node:crypto';
import { sql, type Insertable, type Kysely } from 'kysely';
import { createFleetPass } from '../src/fleet/fleet-pass.ts';
import type { OkmsTable } from '../src/db/schema.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../src/okm/model.ts';
import { parseReported } from '../src/device/reported.ts';
import { storedReport } from '../src/shared/reported-values.ts';
import { loadSettings } from '../src/config/settings.ts';
import type { PolledOkmRow } from '../src/device/poll-repository.ts';
import { desiredState, type PollSettings } from '../src/device/poll-service.ts';
import { decidePoll } from '../src/device/poll-verdict.ts';
import { correctionColumns, NOTHING_RECORDED } from '../src/okm/correction-record.ts';
import { settingsColumns } from '../src/okm/repository.ts';
import { canonicalDigest } from '../src/shared/canonical-json.ts';
import type { Db } from '../src/db/database.ts';
import { withDb } from './harness.ts';

/** FLEET_POLLING_INTERVAL as the benchmarks' servers run (the default). */
const SERVER_DEFAULT_POLLING_INTERVAL_S = 150;

/** The fleet-wide latest release of each kind, which the OKMs in step report. */
export const FIRMWARE = { kas: '2.10.0', batch_key: '1.2', wireless_key: '3.0' } as const;

function configuredTemplate(index: number): OkmSettings {
  const locks = Array.from({ length: 4 + index }, (_, n) => `LOCK-${index}-${String(n).padStart(3, '0')}`);
  const users = Array.from({ length: 10 + 3 * index }, (_, n) => ({
    user_id: 100_000 + n,
    // The same in every process: a fleet seeded by one process is polled by another's paths (bench:poll-ab), whose list digests must match it.
    pin_hash: createHash('sha256').update(`pin ${index} ${n}`).digest('hex').slice(0, 32),
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
    // Due again 30 minutes after the last poll: a fleet of 1 M takes minutes to store on a slow
    // host, and OKMs falling due during a bench would measure the overdue sweep, not the polls.
    pollingInterval: 600,
  };
}

/** Seven configured templates (lists of 4–10 locks and 10–28 users) and one unconfigured OKM; OKM i is configured as TEMPLATES[i % TEMPLATES.length]. */
export const TEMPLATES: OkmSettings[] = [...Array.from({ length: 7 }, (_, index) => configuredTemplate(index)), UNCONFIGURED_OKM];
export const serialOf = (index: number) => `OKM-${String(index).padStart(7, '0')}`;

/** Each template's list digests, computed once: a run's request paths would otherwise take half a minute to make at 1 M OKMs. */
const LIST_DIGESTS = new Map(
  TEMPLATES.map((template) => [
    template,
    {
      ...(template.assetList ? { assetList: canonicalDigest(template.assetList) } : {}),
      ...(template.usersAssets ? { usersAssets: canonicalDigest(template.usersAssets) } : {}),
    },
  ]),
);

/** A poll's report as stored, for a device sending `parameters`. */
const storedReportOf = (parameters: Record<string, string>) => storedReport(`?${new URLSearchParams(parameters)}`, parameters);

/** The query string of a device in step with its template. */
function inSyncParameters(template: OkmSettings, now: number): Record<string, string> {
  return {
    kasFirmware: FIRMWARE.kas,
    kasDateTime: String(now),
    retailCfg: template.auditingEnabled ? '2' : '1',
    configUrl: '/api/v1/config',
    auditUrl: '/api/v1/audit',
    ...LIST_DIGESTS.get(template),
    batchKeyFirmware: FIRMWARE.batch_key,
    wirelessKeyFirmware: FIRMWARE.wireless_key,
    ...(template.keyCheckoutWindow
      ? { keyCheckoutWindowTime: String(template.keyCheckoutWindow.time), keyCheckoutWindowContact: template.keyCheckoutWindow.contact }
      : {}),
    installCode: '12345678',
    cacheMode: String(template.cacheMode ?? 1),
    pollingInterval: String(template.pollingInterval ?? SERVER_DEFAULT_POLLING_INTERVAL_S),
  };
}

/**
 * The request mix, by share of requests: most devices are in step and get {}; the others
 * have one difference each and get one correction.
 */
export const MIX: {
  share: number;
  name: string;
  change: (parameters: Record<string, string>, now: number) => void;
  /** The KAS firmware version such a device reports, as the OKM's row records it. */
  reportedKas?: string;
}[] = [
  { share: 0.88, name: 'in step → {}', change: () => {} },
  { share: 0.04, name: 'clock 10 min off → kasDateTime', change: (p, now) => (p.kasDateTime = String(now - 600_000)) },
  { share: 0.03, name: 'old KAS firmware 2.9.9 → kasFirmware offer', change: (p) => (p.kasFirmware = '2.9.9'), reportedKas: '2.9.9' },
  // The unconfigured template has no asset list to be stale: those requests stay in step.
  {
    share: 0.03,
    name: 'stale asset list digest → assetList (read from the database)',
    change: (p) => p.assetList && (p.assetList = '0'.repeat(64)),
  },
  {
    share: 0.02,
    name: 'polling interval 300 → pollingInterval',
    change: (p) => (p.pollingInterval = '300'),
  },
];

/**
 * The mix entry of the OKM at `index`, the same on every run: a steady poll gets the answer its
 * OKM got on its previous poll (seedFleet records it as the OKM's last correction), as a device
 * that keeps sending the same query does. Chosen by a hash of the index, not by its phase.
 */
export function mixEntryOf(index: number): (typeof MIX)[number] {
  let pick = Math.imul(index + 1, 0x9e3779b1) >>> 0;
  pick /= 2 ** 32;
  return MIX.find((entry) => (pick -= entry.share) < 0) ?? MIX[0]!;
}

/** Paths a run cycles through: in fleet order each OKM's at most once, up to this many; in random order as many as runs before the fleet order took. */
const FLEET_ORDER_PATHS = 200_000;
const RANDOM_ORDER_PATHS = 50_000;

/**
 * When each bench OKM polls in its fleet. A real fleet polls in a steady order: each device one
 * interval after its last poll, so the order of polls is the order of last sync times, and the
 * entry a poll moves in a time-keyed index (last sync, due by) comes from near one end and goes
 * to the other. The phase is not the serial number's order (a device's serial says nothing of
 * when it was switched on): OKM i polls at rank (i × PHASE_STRIDE) mod fleet size, a
 * permutation for every fleet smaller than the prime PHASE_STRIDE, which scatters neighbours in
 * serial number order (and so in the table) across the interval.
 */
const PHASE_STRIDE = 2_147_483_647;
/** Products stay below 2^53, so exact in a double, up to this fleet size. */
const LARGEST_PHASED_FLEET = Math.floor(Number.MAX_SAFE_INTEGER / PHASE_STRIDE);
export function phaseRankOf(index: number, fleetSize: number): number {
  if (fleetSize > LARGEST_PHASED_FLEET) throw new Error(`a bench fleet has at most ${LARGEST_PHASED_FLEET} OKMs`);
  return (index * PHASE_STRIDE) % fleetSize;
}

/**
 * `fleet`: the OKMs poll in their phase order, as seedFleet left their last sync times (how
 * devices poll); `random`: each request a random OKM, so every poll moves time-keyed index
 * entries from anywhere in the index (a worst case no fleet makes, which earlier runs measured).
 */
export type PollOrder = 'fleet' | 'random';
const POLL_ORDERS: readonly string[] = ['fleet', 'random'] satisfies PollOrder[];

/** The `--order` option of the poll benches. */
export const POLL_ORDER_OPTION = { type: 'string', default: 'fleet' } as const;
export function pollOrderOf(option: string): PollOrder {
  if (!POLL_ORDERS.includes(option)) throw new Error(`--order: expected fleet or random, got "${option}"`);
  return option as PollOrder;
}

/** The indexes of the OKMs of [firstIndex, firstIndex + okmCount) that a run's requests poll, in turn. */
function polledIndexes(okmCount: number, firstIndex: number, fleetSize: number, order: PollOrder): number[] {
  if (order === 'random') return Array.from({ length: RANDOM_ORDER_PATHS }, () => firstIndex + Math.floor(Math.random() * okmCount));
  const count = Math.min(FLEET_ORDER_PATHS, okmCount);
  const indexOfRank = new Int32Array(fleetSize);
  for (let index = 0; index < fleetSize; index++) indexOfRank[phaseRankOf(index, fleetSize)] = index;
  const polled: number[] = [];
  for (let rank = 0; rank < fleetSize && polled.length < count; rank++) {
    const index = indexOfRank[rank]!;
    if (index >= firstIndex && index < firstIndex + okmCount) polled.push(index);
  }
  return polled;
}

/**
 * Request paths for OKMs among `okmCount` from `firstIndex` on (of a seeded fleet of
 * `fleetSize`), in the poll order asked, made just before a run so that kasDateTime is current.
 * A load cycles through them: in fleet order, the OKMs polled first poll again first.
 */
export function requestPaths(configPath: string, okmCount: number, { firstIndex = 0, fleetSize = firstIndex + okmCount, order = 'fleet' }: { firstIndex?: number; fleetSize?: number; order?: PollOrder } = {}): string[] {
  const now = Date.now();
  return polledIndexes(okmCount, firstIndex, fleetSize, order).map((index) => {
    const parameters = inSyncParameters(TEMPLATES[index % TEMPLATES.length]!, now);
    mixEntryOf(index).change(parameters, now);
    return `${configPath}/${serialOf(index)}?${new URLSearchParams(parameters)}`;
  });
}

/** Paths of `count` OKMs whose devices are in step (answered {}), for a check that a server serves the fleet the paths expect. */
export function inStepPaths(configPath: string, count: number): string[] {
  const now = Date.now();
  const paths: string[] = [];
  for (let index = 0; paths.length < count; index++) {
    if (mixEntryOf(index) === MIX[0]) paths.push(`${configPath}/${serialOf(index)}?${new URLSearchParams(inSyncParameters(TEMPLATES[index % TEMPLATES.length]!, now))}`);
  }
  return paths;
}

/** Serials per multi-row insert into the serial list (13 parameters a row, under SQLite's limit of 32 766). */
const SERIALS_PER_INSERT = 2_000;
/**
 * OKMs copied from their templates per transaction (one INSERT … SELECT into okms, one into
 * okm_polls): few statements for a fleet of millions, and a WAL and undo log per commit that
 * stay bounded. Only that bounds it: no trigger runs per copied row (migration 0023 dropped
 * every trigger, ADR 0005).
 */
const OKMS_PER_TRANSACTION = 50_000;
/** Rows per multi-row insert and per transaction where every row is sent (insertOkms). */
const ROWS_PER_INSERT = 500;
const ROWS_PER_TRANSACTION = 10_000;
const LAST_POLLS_SPAN_MS = 10_000;
const templateSerialOf = (index: number) => `BENCH-TEMPLATE-${index}`;

/**
 * Stores `count` OKMs named serialOf(0…) with no customer, each with the columns `columnsOf`
 * gives it (settings columns at least), in batched inserts inside transactions.
 */
export async function insertOkms(db: Db, count: number, columnsOf: (index: number, now: number) => Insertable<OkmsTable> | Omit<Insertable<OkmsTable>, 'serial_number' | 'created_at' | 'updated_at'>): Promise<void> {
  const now = Date.now();
  for (let start = 0; start < count; start += ROWS_PER_TRANSACTION) {
    await db.transaction().execute(async (trx) => {
      for (let batch = start; batch < Math.min(start + ROWS_PER_TRANSACTION, count); batch += ROWS_PER_INSERT) {
        const rows = Array.from({ length: Math.min(ROWS_PER_INSERT, count - batch) }, (_, offset) => ({
          customer_id: null,
          ...columnsOf(batch + offset, now),
          serial_number: serialOf(batch + offset),
          created_at: now,
          updated_at: now,
        }));
        await trx.insertInto('okms').values(rows).execute();
      }
    });
  }
}

/** The columns of an unconfigured OKM, for insertOkms. */
export const UNCONFIGURED_COLUMNS = settingsColumns(UNCONFIGURED_OKM) as Insertable<OkmsTable>;

/**
 * Migrates a fresh database and stores `okmCount` OKMs and the fleet firmware. Only the
 * serials cross from here to the database (multi-row inserts into a scratch table); each
 * OKM's row is copied from its template's row by INSERT … SELECT, in transactions of
 * OKMS_PER_TRANSACTION, so a million take seconds, not the minutes of sending every row's
 * lists.
 */
const benchFirmwareUrl = (kind: string, version: string) => `https://firmware.example/${kind}/${version}.bin`;
const BENCH_FIRMWARE_SHA256 = 'ab'.repeat(32);

export async function seedFleet(env: Record<string, string>, okmCount: number): Promise<void> {
  const settings = loadSettings({ LOG_LEVEL: 'silent', ...env });
  const steadyRecords = new Map<string, ReturnType<typeof steadyRecordOf>>();
  const steadyRecord = (templateIndex: number, entry: (typeof MIX)[number]) => {
    const key = `${templateIndex} ${entry.name}`;
    if (!steadyRecords.has(key)) steadyRecords.set(key, steadyRecordOf(TEMPLATES[templateIndex]!, entry, settings, Date.now()));
    return steadyRecords.get(key)!;
  };
  await withDb(env, async (typedDb) => {
    // The scratch table is not in the schema's types.
    const db = typedDb as unknown as Kysely<Record<string, Record<string, unknown>>>;
    const now = Date.now();
    for (const [kind, version] of Object.entries(FIRMWARE)) {
      await db.insertInto('firmware_releases').values({ kind, version, url: benchFirmwareUrl(kind, version), sha256: BENCH_FIRMWARE_SHA256, size: null, created_at: now }).execute();
      await db.insertInto('fleet_firmware').values({ kind, version }).execute();
    }
    // Each OKM as its last poll left it (in step, not overdue): the benchmarks measure a fleet's
    // steady state, not every OKM's first poll, which clears the enrolment mark (overdue_at 0) and
    // looks for okm.enrolled subscribers. The OKMs last polled in their phase order (phaseRankOf),
    // the first of them longest ago, within the last LAST_POLLS_SPAN_MS: a span far shorter than
    // an interval leaves every OKM due at least 7 minutes after the seeding began.
    const templateRows = TEMPLATES.map((template, index) => ({
      ...(settingsColumns(template) as Insertable<OkmsTable>),
      serial_number: templateSerialOf(index),
      customer_id: null,
      created_at: now,
      updated_at: now,
      firmware_version: FIRMWARE.kas,
      batch_key_firmware_version: FIRMWARE.batch_key,
      wireless_key_firmware_version: FIRMWARE.wireless_key,
      overdue_at: null,
    }));
    await db.insertInto('okms').values(templateRows).execute();
    // What each template's OKMs reported on their last poll, as a poll stores it: a steady poll
    // rewrites its poll row at the same size, where a row seeded empty would grow on its first poll.
    await db.schema.createTable('bench_reported').addColumn('template', 'text', (column) => column.primaryKey()).addColumn('reported', 'text').execute();
    await db
      .insertInto('bench_reported')
      .values(TEMPLATES.map((template, index) => ({ template: templateSerialOf(index), reported: storedReportOf(inSyncParameters(template, now)) })))
      .execute();
    await db.schema
      .createTable('bench_serials')
      .addColumn('position', 'integer', (column) => column.primaryKey())
      .addColumn('serial_number', 'text')
      .addColumn('template', 'text')
      .addColumn('last_sync_time', 'bigint')
      .addColumn('last_correction', 'text')
      .addColumn('correction_digest', 'text')
      .addColumn('correction_since_poll', 'bigint')
      .addColumn('offer_hold', 'text')
      .addColumn('stuck_resolver', 'text')
      .addColumn('stuck_since', 'bigint')
      .addColumn('polls', 'bigint')
      .addColumn('firmware_version', 'text')
      .execute();
    for (let start = 0; start < okmCount; start += SERIALS_PER_INSERT) {
      const rows = Array.from({ length: Math.min(SERIALS_PER_INSERT, okmCount - start) }, (_, offset) => {
        const index = start + offset;
        const lastSync = now - LAST_POLLS_SPAN_MS + Math.floor((phaseRankOf(index, okmCount) * LAST_POLLS_SPAN_MS) / okmCount);
        return {
          position: index,
          serial_number: serialOf(index),
          template: templateSerialOf(index % TEMPLATES.length),
          last_sync_time: lastSync,
          ...steadyRecord(index % TEMPLATES.length, mixEntryOf(index)),
          firmware_version: mixEntryOf(index).reportedKas ?? FIRMWARE.kas,
        };
      });
      await db.insertInto('bench_serials').values(rows).execute();
    }
    // What each OKM's own steady polls report and get back: its correction record and its KAS firmware version.
    const fromSerial = ['last_correction', 'correction_digest', 'correction_since_poll', 'offer_hold', 'stuck_resolver', 'stuck_since', 'firmware_version'];
    const copied = Object.keys(templateRows[0]!).filter((column) => column !== 'serial_number' && !fromSerial.includes(column));
    for (let start = 0; start < okmCount; start += OKMS_PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('okms')
          .columns(['serial_number', ...copied, ...fromSerial] as 'serial_number'[])
          .expression(
            trx
              .selectFrom('bench_serials as s')
              .innerJoin('okms as t', 't.serial_number', 's.template')
              .select(['s.serial_number', ...copied.map((column) => sql.ref(`t.${column}`).as(column)), ...fromSerial.map((column) => sql.ref(`s.${column}`).as(column))])
              .where('s.position', '>=', start)
              .where('s.position', '<', start + OKMS_PER_TRANSACTION),
          )
          .execute();
        await trx
          .insertInto('okm_polls')
          .columns(['serial_number', 'last_sync_time', 'last_ip', 'reported', 'install_code', 'polls'])
          .expression(
            trx
              .selectFrom('bench_serials as s')
              .innerJoin('bench_reported as r', 'r.template', 's.template')
              .select(['s.serial_number', 's.last_sync_time', sql.lit('127.0.0.1').as('last_ip'), 'r.reported', sql.lit('12345678').as('install_code'), 's.polls'])
              .where('s.position', '>=', start)
              .where('s.position', '<', start + OKMS_PER_TRANSACTION),
          )
          .execute();
      });
    }
    await db.schema.dropTable('bench_serials').execute();
    await db.schema.dropTable('bench_reported').execute();
    await db.deleteFrom('okms').where('serial_number', 'in', templateRows.map((row) => row.serial_number)).execute();
    // The summary as the server's first fleet pass would count it, so that no pass runs during the measurement's first seconds.
    await createFleetPass(typedDb, { fleetPollingInterval: SERVER_DEFAULT_POLLING_INTERVAL_S }).runPass();
  });
}

/** Polls after which an OKM's correction record is as its steady polls leave it: past the retry policy's longest backoff, at the cap. */
const POLLS_UNTIL_STEADY = 400;

/**
 * What the OKMs of a template and mix entry record about their corrections once their polls
 * are steady, and how many polls that took, by the poll's own decision (poll-verdict.ts): a
 * device that ignores its correction is stuck, and one that refuses firmware has its offers
 * held back by the retry policy. Without it their first polls in a run would write what the
 * run would then measure as steady.
 */
function steadyRecordOf(template: OkmSettings, entry: (typeof MIX)[number], settings: PollSettings, now: number) {
  const parameters = inSyncParameters(template, now);
  entry.change(parameters, now);
  const reported = parseReported(parameters);
  const row = { ...(settingsColumns(template) as unknown as PolledOkmRow), pending_message_id: null, kas_firmware: null, batch_key_firmware: null, wireless_key_firmware: null };
  const releases = Object.fromEntries(
    Object.entries(FIRMWARE).map(([kind, version]) => [kind, { kind, version, url: benchFirmwareUrl(kind, version), sha256: BENCH_FIRMWARE_SHA256, size: null, createdAt: now }]),
  ) as Parameters<typeof desiredState>[1];
  let record = NOTHING_RECORDED;
  for (let poll = 1; poll <= POLLS_UNTIL_STEADY; poll++) {
    const desired = desiredState(row, releases, null, settings, now);
    record = decidePoll({ desired, reported, previous: record, poll, now, policyFor: () => settings.firmwareRetryPolicy, stuckAfterPolls: settings.stuckAfterPolls }).record;
  }
  return { ...correctionColumns(record), polls: POLLS_UNTIL_STEADY };
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
