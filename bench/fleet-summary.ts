/**
 * Fleet summary, drift and the OKM list's pages on a large fleet (SPEC section 11: the summary
 * in under 200 ms with 1 M OKMs on SQLite; issue 12: a filtered list page in under 300 ms,
 * drift under 20 ms). In process, through app.inject, so it times the route and its queries.
 *
 *   npx tsx bench/fleet-summary.ts [--okms 1000000] [--customers 20] [--postgres]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { issueToken } from '../src/auth/tokens.ts';
import { loadSettings } from '../src/config/settings.ts';
import { createCustomer } from '../src/customers/repository.ts';
import { dialectFor, openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { keepPageBuckets } from '../src/db/page-buckets.ts';
import { PAGED_LISTS } from '../src/db/paged-lists.ts';
import { foldFleetSummaryDeltas, recountFleetSummary } from '../src/okm/fleet-summary-counts.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE } from '../src/okm/fleet-states.ts';
import { sweepOverdueOkms } from '../src/okm/overdue-repository.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { createKeyRing } from '../src/secrets/reseal.ts';
import { buildServer } from '../src/server.ts';
import { UNCONFIGURED_COLUMNS, insertOkms, serialOf } from './fleet.ts';
import { median, withFreshDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    okms: { type: 'string', default: '1000000' },
    customers: { type: 'string', default: '20' },
    postgres: { type: 'boolean', default: false },
  },
});
const OKM_COUNT = Number(options.okms);
const CUSTOMER_COUNT = Number(options.customers);
const CORRECTIONS = [null, null, null, null, null, null, null, 'kasDateTime', 'kasFirmware', 'pollingInterval'];
const KAS_VERSIONS = ['2.10.0', '2.9.9', '2.8.1'];

async function main(): Promise<void> {
  await withFreshDatabase(options.postgres ? 'postgres' : 'sqlite', async ({ name, env }) => {
    const settings = loadSettings({ ...process.env, ...env, LOG_LEVEL: 'silent' });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const customers: { id: number }[] = [];
    for (let index = 0; index < CUSTOMER_COUNT; index++) customers.push(await createCustomer(db, `customer-${index}`));

    const seeding = Date.now();
    await insertOkms(db, OKM_COUNT, (index, now) => {
      const polled = index % 50 !== 0;
      const lastSync = polled ? now - (index % 97 === 0 ? 3_600_000 : 60_000) : null;
      return {
        ...UNCONFIGURED_COLUMNS,
        customer_id: index % 100 === 0 ? null : customers[index % CUSTOMER_COUNT]!.id,
        last_sync_time: lastSync,
        // As the last poll left them: ~1 % silent for an hour, past due, not swept yet.
        due_by: lastSync === null ? null : lastSync + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * settings.fleetPollingInterval,
        overdue_at: lastSync === null ? 0 : null,
        last_correction: polled ? CORRECTIONS[index % CORRECTIONS.length]! : null,
        firmware_version: polled ? KAS_VERSIONS[index % KAS_VERSIONS.length]! : null,
        batch_key_firmware_version: polled ? '1.2' : null,
        wireless_key_firmware_version: polled && index % 2 === 0 ? '3.0' : null,
        reported: polled ? JSON.stringify({ kasFirmware: KAS_VERSIONS[index % KAS_VERSIONS.length], kasDateTime: String(now) }) : null,
      };
    });
    console.log(`${name}: stored ${OKM_COUNT} OKMs of ${CUSTOMER_COUNT} customers in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
    // A serving database's WAL is kept short by its checkpointer; a bulk load leaves gigabytes in it, which every read would walk.
    if (name === 'sqlite') await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
    // As the server's bucket keeper does in its first seconds after a bulk load: otherwise its
    // steps (tens of ms each, on the one event loop) would be timed with the first routes.
    const cutting = Date.now();
    while ((await keepPageBuckets(db, dialect, PAGED_LISTS)) > 0);
    console.log(`${name}: page buckets cut in ${((Date.now() - cutting) / 1000).toFixed(1)} s`);
    // The triggers appended a delta per OKM: folded as the server's folder would, then counted
    // afresh as migration 0017 counts an existing fleet (the same counts, timed both ways).
    const folding = Date.now();
    let deltas = 0;
    for (let taken = 1; taken > 0; deltas += taken) taken = await foldFleetSummaryDeltas(db, dialect);
    console.log(`${name}: fleet summary: ${deltas} deltas folded in ${((Date.now() - folding) / 1000).toFixed(1)} s`);
    const recounting = Date.now();
    await recountFleetSummary(db);
    console.log(`${name}: fleet summary: counted afresh (migration 0017's backfill) in ${((Date.now() - recounting) / 1000).toFixed(1)} s`);

    const app = await buildServer({ settings, db, dialect, keyRing });
    await app.ready();
    try {
      const admin = (await issueToken(db, keyRing, settings, { scopes: ['admin'], ttlSeconds: 3600 })).token;
      const customer = (await issueToken(db, keyRing, settings, { customer: 'customer-1', scopes: ['okm:read'], ttlSeconds: 3600 })).token;
      const targets: [string, string, string][] = [
        ['summary, admin, every OKM', '/api/v1/fleet/summary', admin],
        ['summary, admin, ?customer=', '/api/v1/fleet/summary?customer=customer-1', admin],
        ['summary, customer token', '/api/v1/fleet/summary', customer],
        ['drift of one OKM', `/api/v1/okms/${serialOf(1)}/drift`, admin],
        ['OKM list, admin, page 5 000 of 100 (no filter)', '/api/v1/okms?page=5000&results_per_page=100', admin],
        ['OKM list, customer token, deepest page', `/api/v1/okms?page=${Math.max(1, Math.floor(OKM_COUNT / CUSTOMER_COUNT / 100))}&results_per_page=100`, customer],
        ['OKM list, admin, state=drifting, page 1', '/api/v1/okms?state=drifting&results_per_page=100', admin],
        ['OKM list, admin, state=drifting, page 100', '/api/v1/okms?state=drifting&page=100&results_per_page=100', admin],
        ['OKM list, customer token, state=overdue, page 1', '/api/v1/okms?state=overdue&results_per_page=100', customer],
        ['OKM list, admin, firmware_version=2.9.9, page 100', '/api/v1/okms?firmware_version=2.9.9&page=100&results_per_page=100', admin],
        ['OKM list, admin, serial_prefix, page 1', `/api/v1/okms?serial_prefix=${serialOf(0).slice(0, -3)}&results_per_page=100`, admin],
        ['OKM list, customer token, sort=-last_sync_time, page 1', '/api/v1/okms?sort=-last_sync_time&results_per_page=100', customer],
      ];
      const timeRoute = async (label: string, url: string, token: string) => {
        const times: number[] = [];
        for (let run = 0; run < 7; run++) {
          const started = process.hrtime.bigint();
          const response = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
          times.push(Number(process.hrtime.bigint() - started) / 1e6);
          if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
        }
        console.log(`${name}: ${label}: median ${median(times).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms (${times.length} runs)`);
      };
      // Overdue counts the OKMs past due that the sweep has not marked yet from okms_due_by_idx: here every silent one.
      await timeRoute('summary, admin, every OKM, before the overdue sweep', '/api/v1/fleet/summary', admin);
      const sweeping = Date.now();
      const swept = await sweepOverdueOkms(db, dialect);
      console.log(`${name}: overdue sweep marked ${swept} OKMs in ${((Date.now() - sweeping) / 1000).toFixed(1)} s`);
      for (const [label, url, token] of targets) await timeRoute(label, url, token);
    } finally {
      await app.close();
      await db.destroy();
    }
  });
}

await main();
