/**
 * The SQLite checkpoint worker (src/db/dialects/sqlite-checkpointer.ts) at several waits
 * between its passes, without HTTP or keyfleet's poll: a table of 100 000 rows shaped like
 * okm_polls, written by transactions of 64 upserts of random rows at a fixed rate (as batches
 * of polls commit), with keyfleet's pragmas. For each wait, in rotating rounds: the worker's
 * CPU per row written and its passes a second (from /proc/<pid>/task, Linux), and how long the
 * committing thread's transactions took (p50, p99, max): a pass that copies many pages can
 * hold up the commits that run meanwhile.
 *
 *   npx tsx bench/checkpoint-cadence.ts [--waits 10,50,200] [--rate 100] [--seconds 10] [--rounds 2]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import { checkpointInBackground } from '../src/db/dialects/sqlite-checkpointer.ts';
import { median } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    waits: { type: 'string', default: '10,50,200' },
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
  },
});
const ROWS = 100_000;
const ROWS_PER_TRANSACTION = 64;
const REPORTED = 'x'.repeat(300);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-checkpoint-cadence-'));
const seeded = path.join(dir, 'seeded.sqlite');

const seed = new SQLite(seeded);
seed.exec('CREATE TABLE polls (serial_number TEXT PRIMARY KEY, polls INTEGER NOT NULL, last_sync_time INTEGER, last_ip TEXT, reported TEXT)');
const insert = seed.prepare("INSERT INTO polls VALUES (?, 1, 0, '127.0.0.1', ?)");
seed.transaction(() => {
  for (let row = 0; row < ROWS; row++) insert.run(`OKM${row}`, REPORTED);
})();
seed.close();

/** CPU seconds of each thread of this process, by name (the checkpoint worker is 'WorkerThread'). */
function threadCpu(): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${process.pid}/task`)) {
    const name = fs.readFileSync(`/proc/${process.pid}/task/${tid}/comm`, 'utf8').trim();
    const fields = fs.readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    cpu.set(`${name}:${tid}`, (Number(fields[11]) + Number(fields[12])) / 100);
  }
  return cpu;
}

async function measure(waitMs: number) {
  const file = path.join(dir, `wait-${waitMs}.sqlite`);
  fs.copyFileSync(seeded, file);
  const database = new SQLite(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma(`mmap_size = ${2 ** 31}`);
  checkpointInBackground(database, file, { shortestWaitMs: waitMs });
  const upsert = database.prepare(
    "INSERT INTO polls VALUES (?, 1, ?, '127.0.0.1', ?) ON CONFLICT (serial_number) DO UPDATE SET polls = polls + 1, last_sync_time = excluded.last_sync_time, reported = excluded.reported",
  );
  const transaction = database.transaction((now: number) => {
    for (let row = 0; row < ROWS_PER_TRANSACTION; row++) upsert.run(`OKM${Math.floor(Math.random() * ROWS)}`, now, REPORTED);
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = threadCpu();
  const durations: number[] = [];
  const interval = 1000 / Number(options.rate);
  const started = performance.now();
  for (let count = 0; performance.now() - started < Number(options.seconds) * 1000; count++) {
    const wait = started + count * interval - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const begun = performance.now();
    transaction(Date.now());
    durations.push(performance.now() - begun);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = threadCpu();
  database.close();
  const worker = [...after].filter(([name]) => name.startsWith('WorkerThread:') && before.has(name)).reduce((sum, [name, cpu]) => sum + cpu - before.get(name)!, 0);
  const rows = durations.length * ROWS_PER_TRANSACTION;
  durations.sort((a, b) => a - b);
  const at = (share: number) => durations[Math.min(durations.length - 1, Math.floor(durations.length * share))]!;
  return { waitMs, workerMicrosPerRow: (worker * 1e6) / rows, workerShareOfCore: worker / seconds, p50: at(0.5), p99: at(0.99), max: durations.at(-1)! };
}

const waits = options.waits.split(',').map(Number);
const results = new Map<number, Awaited<ReturnType<typeof measure>>[]>(waits.map((wait) => [wait, []]));
for (let round = 0; round < Number(options.rounds); round++) {
  for (let turn = 0; turn < waits.length; turn++) {
    const result = await measure(waits[(turn + round) % waits.length]!);
    results.get(result.waitMs)!.push(result);
    console.log(
      `round ${round + 1}, wait ${result.waitMs} ms: worker ${result.workerMicrosPerRow.toFixed(1)} µs a row (${(result.workerShareOfCore * 100).toFixed(1)} % of a core); ` +
        `transactions p50 ${result.p50.toFixed(2)}, p99 ${result.p99.toFixed(2)}, max ${result.max.toFixed(2)} ms`,
    );
  }
}
console.log(`\nmedians, ${options.rate} transactions of ${ROWS_PER_TRANSACTION} rows a second, ${options.seconds} s each:`);
for (const [wait, runs] of results) {
  const of = (pick: (run: (typeof runs)[number]) => number) => median(runs.map(pick));
  console.log(`  wait ${wait} ms: worker ${of((run) => run.workerMicrosPerRow).toFixed(1)} µs a row, ${(of((run) => run.workerShareOfCore) * 100).toFixed(1)} % of a core; transactions p99 ${of((run) => run.p99).toFixed(2)} ms, max ${of((run) => run.max).toFixed(2)} ms`);
}
fs.rmSync(dir, { recursive: true, force: true });
