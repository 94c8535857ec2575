/**
 * Whether partial indexes of the in-step OKMs pay for themselves (issue 14): 1 M OKMs of 20
 * customers, the OKM list's `state=in_step` cursor pages (whole fleet and one customer; the
 * first, and those after a cursor in the middle, near the end and at random places, through
 * listOkms, in process) and a poll-like UPDATE of random OKMs
 * (the columns every poll sets, in transactions of 64 as poll batches are), without and with
 * `okms_in_step_idx` / `okms_customer_in_step_idx`, alternated.
 *
 *   npx tsx bench/in-step-index.ts [--sqlite] [--postgres] [--okms 1000000] [--rounds 2]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql, type SqlBool } from 'kysely';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/repository.ts';
import { dialectFor, openDatabase, type Db } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { listOkms } from '../src/okm/admin-repository.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, median } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    okms: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '2' },
  },
});
const OKM_COUNT = Number(options.okms);
const ROUNDS = Number(options.rounds);
const CUSTOMERS = 20;
const PER_PAGE = 30;
const PAGES = 40;
const UPDATES = 20_000;
const UPDATES_PER_TRANSACTION = 64;
const ROWS_PER_STATEMENT = 50_000;

const IN_STEP = sql<SqlBool>`last_correction is null and last_sync_time is not null`;

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

const serialOf = (index: number) => `OKM-${1_000_000 + index}`;

async function seed(db: Db, customerIds: number[], now: number): Promise<void> {
  for (let start = 0; start < OKM_COUNT; start += ROWS_PER_STATEMENT) {
    const end = Math.min(start + ROWS_PER_STATEMENT, OKM_COUNT);
    const customerOf = sql.raw(`case ${customerIds.map((id, index) => `when i % ${CUSTOMERS} = ${index} then ${id}`).join(' ')} end`);
    await sql`with recursive counter(i) as (select ${sql.lit(start)} union all select i + 1 from counter where i < ${sql.lit(end - 1)})
      insert into okms (serial_number, customer_id, auditing_enabled, status_urls, last_sync_time, last_correction, firmware_version, created_at, updated_at)
      select 'OKM-' || (1000000 + i), ${customerOf}, 0, '[]',
        case when i % 50 = 0 then null else ${sql.lit(now - 60_000)} - i % 1000 end,
        case when i % 50 = 0 then null when i % 4 = 3 then 'kasDateTime' end,
        '2.1.0', ${sql.lit(now)}, ${sql.lit(now)}
      from counter`.execute(db);
  }
}

/** The serial number at a place of the in-step OKMs in serial number order: the cursor of the page after it. */
async function inStepSerialAt(db: Db, customerId: number | undefined, offset: number): Promise<string> {
  let query = db.selectFrom('okms').select('serial_number').where(IN_STEP).orderBy('serial_number').limit(1).offset(offset);
  if (customerId !== undefined) query = query.where('customer_id', '=', customerId);
  return (await query.executeTakeFirstOrThrow()).serial_number;
}

async function timePages(db: Db, customerId: number | undefined, now: number): Promise<number[]> {
  const filter = { state: 'in_step' as const, now, ...(customerId === undefined ? {} : { customerId }) };
  let count = db.selectFrom('okms').select((eb) => eb.fn.countAll<number | string>().as('n')).where(IN_STEP);
  if (customerId !== undefined) count = count.where('customer_id', '=', customerId);
  const matches = Number((await count.executeTakeFirstOrThrow()).n);
  const offsets = [Math.floor(matches / 2), matches - PER_PAGE, ...Array.from({ length: PAGES }, () => Math.floor(Math.random() * matches))];
  const cursors: (string | undefined)[] = [undefined];
  for (const offset of offsets) cursors.push(await inStepSerialAt(db, customerId, offset));
  const times: number[] = [];
  for (const after of cursors) {
    const started = process.hrtime.bigint();
    await listOkms(db, filter, { after: after === undefined ? undefined : [after], limit: PER_PAGE });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return times;
}

/** µs per poll-like update: the columns that every poll sets, on random OKMs. */
async function timeUpdates(db: Db, now: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let done = 0; done < UPDATES; done += UPDATES_PER_TRANSACTION) {
    await db.transaction().execute(async (trx) => {
      for (let index = 0; index < UPDATES_PER_TRANSACTION; index++) {
        const serial = serialOf(Math.floor(Math.random() * OKM_COUNT));
        await trx
          .updateTable('okms')
          .set({ last_sync_time: now + done, last_ip: '10.0.0.2', firmware_version: '2.1.0', due_by: now + done + 450_000 })
          .where('serial_number', '=', serial)
          .execute();
      }
    });
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / UPDATES;
}

async function main(): Promise<void> {
  await forEachBenchDatabase(options, async ({ name, env }) => {
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    try {
      await migrateToLatest(db, dialect);
      const customerIds: number[] = [];
      for (let index = 0; index < CUSTOMERS; index++) customerIds.push((await createCustomer(db, `in-step-${index}`)).id);
      const now = Date.now();
      const seeding = Date.now();
      await seed(db, customerIds, now);
      if (name === 'sqlite') await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
      await sql`vacuum`.execute(db);
      await sql`analyze`.execute(db);
      console.log(`${name}: ${OKM_COUNT} OKMs stored in ${((Date.now() - seeding) / 1000).toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(2)})`);
      for (let round = 0; round < ROUNDS; round++) {
        for (const indexed of [false, true]) {
          if (indexed) {
            await sql`create index okms_in_step_idx on okms (serial_number) where ${IN_STEP}`.execute(db);
            await sql`create index okms_customer_in_step_idx on okms (customer_id, serial_number) where ${IN_STEP}`.execute(db);
            await sql`analyze`.execute(db);
          }
          const fleet = await timePages(db, undefined, now);
          const customer = await timePages(db, customerIds[1], now);
          const updateUs = await timeUpdates(db, now);
          const figures = (times: number[]) => `p50 ${percentile(times, 0.5).toFixed(1)} / p99 ${percentile(times, 0.99).toFixed(1)} ms (first ${times[0]!.toFixed(1)}, middle ${times[1]!.toFixed(1)}, last ${times[2]!.toFixed(1)}; median ${median(times).toFixed(1)})`;
          console.log(
            `${name} round ${round + 1}, ${indexed ? 'with' : 'without'} the in-step indexes: whole fleet ${figures(fleet)}; one customer ${figures(customer)}; ` +
              `poll-like update ${updateUs.toFixed(1)} µs (load ${os.loadavg()[0]!.toFixed(2)})`,
          );
          if (indexed) {
            await sql`drop index okms_in_step_idx`.execute(db);
            await sql`drop index okms_customer_in_step_idx`.execute(db);
          }
        }
      }
    } finally {
      await db.destroy();
    }
  });
}

await main();
