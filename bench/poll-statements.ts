/**
 * The database part of the config poll, without HTTP: batches of polls through the poll
 * handler, a statement per poll against the dialect's own statements (set-based on
 * PostgreSQL), in alternating rounds so that both meet the same load on a shared machine.
 * Besides polls/s it prints the CPU and the bytes written per poll, which a loaded host moves
 * far less than the rate (on SQLite the bytes are the WAL: each index entry a poll moves
 * costs a page).
 *
 *   npx tsx bench/poll-statements.ts -- [--sqlite] [--postgres] [--okms 100000] [--duration 5]
 *                                      [--rounds 3] [--batch 32] [--concurrency 6] [--order fleet|random]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { dialectFor } from '../src/db/database.ts';
import type { DialectStrategy } from '../src/db/dialects/strategy.ts';
import { createPollHandler, type PollRequest } from '../src/device/poll-service.ts';
import { reportedQueryOf } from '../src/shared/reported-values.ts';
import { POLL_ORDER_OPTION, pollOrderOf, requestPaths, seedFleet } from './fleet.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, median, withDb } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    duration: { type: 'string', default: '5' },
    okms: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    batch: { type: 'string', default: '32' },
    concurrency: { type: 'string', default: '6' },
    order: POLL_ORDER_OPTION,
  },
});
const OKM_COUNT = Number(options.okms);
const DURATION_MS = Number(options.duration) * 1000;
const BATCH = Number(options.batch);
const CONCURRENCY = Number(options.concurrency);

function pollRequests(): PollRequest[] {
  return requestPaths('/api/v1/config', OKM_COUNT, { order: pollOrderOf(options.order) }).map((requestPath) => {
    const url = new URL(requestPath, 'http://bench');
    return { serialNumber: url.pathname.split('/').pop()!, ip: '127.0.0.1', query: Object.fromEntries(url.searchParams), reportedQuery: reportedQueryOf(requestPath), now: Date.now() };
  });
}

interface RoundFigures {
  pollsPerSecond: number;
  /** This process's CPU (every thread: SQLite's checkpointer too), which the host's load hardly moves. */
  cpuMicrosPerPoll: number;
  /** Bytes this process wrote (Linux /proc/self/io wchar; the WAL and checkpoints on SQLite, nothing on PostgreSQL); 0 elsewhere. */
  kibWrittenPerPoll: number;
}

function bytesWritten(): number {
  const io = fs.existsSync('/proc/self/io') ? fs.readFileSync('/proc/self/io', 'utf8') : '';
  return Number(/^wchar: (\d+)$/m.exec(io)?.[1] ?? 0);
}

await forEachBenchDatabase(options, async ({ name, env }) => {
  await seedFleet(env, OKM_COUNT);
  await withDb(env, async (db, settings) => {
    const dialect = dialectFor(settings);
    const variants: [string, Pick<DialectStrategy, 'writeGrouping' | 'rowSet' | 'lockRowsInOrder'>][] = [
      ['a statement per poll', { ...dialect, rowSet: undefined, writeGrouping: { kind: 'batch', maxSize: BATCH } }],
      ['the dialect’s statements', { ...dialect, writeGrouping: { kind: 'batch', maxSize: BATCH } }],
    ];
    const requests = pollRequests();
    const figures = new Map<string, RoundFigures[]>(variants.map(([label]) => [label, []]));
    for (let round = 0; round < Number(options.rounds); round++) {
      for (const [label, variant] of variants) {
        const handle = createPollHandler(db, settings, variant, () => {});
        let polls = 0;
        const [cpuBefore, writtenBefore] = [process.cpuUsage(), bytesWritten()];
        const end = Date.now() + DURATION_MS;
        // Each worker sends a batch's worth of polls in one turn, so the batcher takes them as one batch.
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (Date.now() < end) {
              // Each poll at its own time, as devices poll: the time-keyed index entries (last sync, due by) move on every poll.
              await Promise.all(Array.from({ length: BATCH }, () => handle({ ...requests[polls++ % requests.length]!, now: Date.now() })));
            }
          }),
        );
        const cpu = process.cpuUsage(cpuBefore);
        figures.get(label)!.push({
          pollsPerSecond: Math.round(polls / (DURATION_MS / 1000)),
          cpuMicrosPerPoll: Math.round((cpu.user + cpu.system) / polls),
          kibWrittenPerPoll: (bytesWritten() - writtenBefore) / polls / 1024,
        });
      }
    }
    for (const [label, rounds] of figures) {
      const of = (figure: keyof RoundFigures) => rounds.map((round) => round[figure]);
      console.log(
        `${name}, ${label}: median ${median(of('pollsPerSecond'))} polls/s (rounds ${of('pollsPerSecond').join(' ')}), ` +
          `${median(of('cpuMicrosPerPoll'))} µs CPU per poll, ${median(of('kibWrittenPerPoll')).toFixed(1)} KiB written per poll`,
      );
    }
  });
});
