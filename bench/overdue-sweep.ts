/**
 * The overdue sweep on a large fleet (issue 13): its cost when nothing is overdue must not grow
 * with the fleet (it reads only okms_due_by_idx entries past due), and what it costs to mark
 * some. In process, on the database directly.
 *
 *   npx tsx bench/overdue-sweep.ts [--okms 1000000] [--overdue 1000] [--postgres]
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadSettings } from '../src/config/settings.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { markOverdueOkms, sweepOverdueOkms } from '../src/okm/overdue-repository.ts';
import { insertEndpoint } from '../src/webhooks/endpoints-repository.ts';
import { UNCONFIGURED_COLUMNS, insertOkms, serialOf } from './fleet.ts';
import { median, withFreshDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    okms: { type: 'string', default: '1000000' },
    overdue: { type: 'string', default: '1000' },
    postgres: { type: 'boolean', default: false },
  },
});
const OKM_COUNT = Number(options.okms);
const OVERDUE_COUNT = Number(options.overdue);
const ROWS_PER_INSERT = 500;
const RUNS = 21;

const load = () => `load ${os.loadavg().map((value) => value.toFixed(2)).join(' ')}`;

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function main(): Promise<void> {
  await withFreshDatabase(options.postgres ? 'postgres' : 'sqlite', async ({ name, env }) => {
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    try {
      await migrateToLatest(db, dialect);
      const seeding = Date.now();
      // Polled within the last 150 s, due 3 × 150 s after that: none overdue.
      await insertOkms(db, OKM_COUNT, (index, now) => ({ ...UNCONFIGURED_COLUMNS, last_sync_time: now - (index % 150) * 1000, due_by: now - (index % 150) * 1000 + 450_000, overdue_at: null }));
      if (dialect.name === 'postgres') await sql`ANALYZE okms`.execute(db);
      console.log(`${name}: stored ${OKM_COUNT} OKMs in ${((Date.now() - seeding) / 1000).toFixed(1)} s (${load()})`);

      const emptySweeps = async (label: string) => {
        const times: number[] = [];
        for (let run = 0; run < RUNS; run++) times.push(await timed(() => markOverdueOkms(db, dialect, Date.now())));
        console.log(`${name}: ${label}: median ${median(times).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms (${RUNS} runs, ${load()})`);
      };
      await emptySweeps(`sweep, ${OKM_COUNT} OKMs, 0 overdue`);

      // Some fall silent: every (OKM_COUNT / OVERDUE_COUNT)th OKM is past due.
      const step = Math.max(1, Math.floor(OKM_COUNT / OVERDUE_COUNT));
      const silent = Array.from({ length: OVERDUE_COUNT }, (_, index) => serialOf(index * step));
      const silence = async () => {
        for (let start = 0; start < silent.length; start += ROWS_PER_INSERT) {
          await db.updateTable('okms').set({ due_by: Date.now() - 1, overdue_at: null }).where('serial_number', 'in', silent.slice(start, start + ROWS_PER_INSERT)).execute();
        }
      };
      await silence();
      const marking = await timed(() => sweepOverdueOkms(db, dialect));
      console.log(`${name}: sweep marking ${OVERDUE_COUNT} overdue of ${OKM_COUNT}, no endpoint: ${marking.toFixed(1)} ms (${load()})`);
      await emptySweeps(`sweep, ${OKM_COUNT} OKMs, ${OVERDUE_COUNT} already marked, 0 newly overdue`);

      await insertEndpoint(db, { customerId: null, url: 'https://hooks.example/fleet', eventTypes: ['okm.overdue'], now: Date.now() });
      await silence();
      const markingSubscribed = await timed(() => sweepOverdueOkms(db, dialect));
      console.log(`${name}: sweep marking ${OVERDUE_COUNT} overdue of ${OKM_COUNT}, one endpoint subscribed (a delivery queued each): ${markingSubscribed.toFixed(1)} ms (${load()})`);
    } finally {
      await db.destroy();
    }
  });
}

await main();
