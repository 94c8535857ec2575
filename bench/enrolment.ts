/**
 * Enrolment of many new OKMs at once (issue 14), the database part without HTTP: polls of
 * serial numbers never seen go through the poll handler (auto-enrol on), each enrolling an
 * OKM, in batches of the dialect's write grouping from several workers at once, while a page
 * bucket keeper steps as a server's would. The fleet is seeded first and each new serial number
 * sorts right after a random seeded one, so that a batch's keys fall in most page buckets of the
 * 'all' and unassigned scopes, as a real enrolment wave's do. It prints enrolments per second
 * and this process's CPU per enrolment.
 *
 *   npx tsx bench/enrolment.ts [--sqlite] [--postgres] [--okms 100000] [--enrolments 50000]
 *                              [--batch 64] [--concurrency 8]
 */
import { parseArgs } from 'node:util';
import { dialectFor } from '../src/db/database.ts';
import { keepPageBuckets } from '../src/db/page-buckets.ts';
import { PAGED_LISTS } from '../src/db/paged-lists.ts';
import { createPollHandler, type PollRequest } from '../src/okm/poll-service.ts';
import { requestPaths, seedFleet, serialOf } from './fleet.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, withDb } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    okms: { type: 'string', default: '100000' },
    enrolments: { type: 'string', default: '50000' },
    batch: { type: 'string', default: '64' },
    concurrency: { type: 'string', default: '8' },
  },
});
const OKM_COUNT = Number(options.okms);
const ENROLMENTS = Number(options.enrolments);
const BATCH = Number(options.batch);
const CONCURRENCY = Number(options.concurrency);
/** How often the keeper looks while it finds nothing to do (PAGE_BUCKET_KEEPER_INTERVAL_MS's default). */
const KEEPER_INTERVAL_MS = 5_000;
/** Its pause between steps while it finds work (page-bucket-keeper.ts). */
const KEEPER_PAUSE_MS = 100;

/** Polls of new serial numbers, each with a seeded OKM's query string (firmware versions and settings as a device reports them). */
function enrolmentRequests(): PollRequest[] {
  const templates = requestPaths('/api/v1/config', OKM_COUNT).map((requestPath) => Object.fromEntries(new URL(requestPath, 'http://bench').searchParams));
  return Array.from({ length: ENROLMENTS }, (_, n) => ({
    serialNumber: `${serialOf(Math.floor(Math.random() * OKM_COUNT))}-N${n}`,
    ip: '127.0.0.1',
    query: templates[n % templates.length]!,
    now: Date.now(),
  }));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

await forEachBenchDatabase(options, async ({ name, env }) => {
  await seedFleet(env, OKM_COUNT);
  await withDb(env, async (db, settings) => {
    const dialect = dialectFor(settings);
    while ((await keepPageBuckets(db, dialect, PAGED_LISTS)) > 0);
    const requests = enrolmentRequests();
    const handle = createPollHandler(db, settings, dialect, () => {});
    let next = 0;
    let enrolled = 0;
    let enrolling = true;
    const keeper = (async () => {
      while (enrolling) await sleep((await keepPageBuckets(db, dialect, PAGED_LISTS)) > 0 ? KEEPER_PAUSE_MS : KEEPER_INTERVAL_MS);
    })();
    const cpuBefore = process.cpuUsage();
    const start = Date.now();
    // Each worker sends a batch's worth of polls in one turn, so the batcher takes them as one batch.
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const batch = requests.slice(next, (next += BATCH));
          const replies = await Promise.all(batch.map((request) => handle({ ...request, now: Date.now() })));
          enrolled += replies.filter((reply) => reply.kind === 'enrolled').length;
        }
      }),
    );
    const seconds = (Date.now() - start) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    enrolling = false;
    await keeper;
    if (enrolled !== ENROLMENTS) throw new Error(`${enrolled} of ${ENROLMENTS} polls enrolled an OKM`);
    console.log(
      `${name}: ${ENROLMENTS} enrolments into ${OKM_COUNT} OKMs in ${seconds.toFixed(1)} s: ${Math.round(ENROLMENTS / seconds)} enrolments/s, ` +
        `${Math.round((cpu.user + cpu.system) / ENROLMENTS)} µs CPU per enrolment (batches of ${BATCH}, ${CONCURRENCY} at once)`,
    );
  });
});
