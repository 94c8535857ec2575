import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/** Pages in the WAL after which the serving connection checkpoints itself, should the worker fall behind. */
const BACKSTOP_AUTOCHECKPOINT_PAGES = 4000;
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/**
 * How long the worker waits after a pass: the shortest wait while the WAL keeps growing or a
 * pass could not copy everything (frequent small checkpoints keep commits fast), doubling up to
 * the longest while the database is idle (so an idle server costs next to no CPU). Each pass
 * that copies pages ends with an fsync; at 2 ms, and with no wait at all after a pass left
 * behind by a commit, the worker spent about 30 µs of CPU per steady poll. 10 ms copies a
 * page written by several commits once, and took that to about 20 µs with the same poll
 * latency (bench/results/checkpoint-cadence.txt); 50 ms took it to 10 µs but doubled p99.
 * Without HTTP (bench/checkpoint-cadence.ts), a pass costs about 1 ms of CPU whatever it
 * copies, most of it the fsync's writeback: 25 ms takes the worker from 12.6 to 9.8 % of a
 * core at 6 400 rows a second, but raised the server's p99 at saturation; from 50 ms on, the
 * WAL outgrows the backstop between passes and the serving connection copies it itself:
 * commits' p99 6, 14 and 27 ms at 50, 100 and 200 ms (ADR 0104).
 */
const SHORTEST_WAIT_MS = 10;
const LONGEST_WAIT_MS = 100;
/** Longest a close waits for the worker's connection (a checkpoint pass in progress, or the worker still starting). */
const CLOSE_WAIT_MS = 2000;

// A plain-JavaScript worker (eval), so it runs the same under tsx and node.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const state = new Int32Array(workerData.state);
const STOP = 0;
const CLOSED = 1;
function signalClosed() {
  Atomics.store(state, CLOSED, 1);
  Atomics.notify(state, CLOSED);
}
function checkpointUntilStopped() {
  const database = new SQLite(workerData.file);
  database.pragma('busy_timeout = 0');
  let previousLog = -1;
  let wait = workerData.shortestWait;
  try {
    while (Atomics.load(state, STOP) === 0) {
      // PASSIVE never waits for, nor blocks, the serving connection: it copies what it can.
      const [{ log, checkpointed }] = database.pragma('wal_checkpoint(PASSIVE)');
      const behind = log > 0 && checkpointed < log;
      wait = behind || log !== previousLog ? workerData.shortestWait : Math.min(Math.max(wait * 2, workerData.shortestWait), workerData.longestWait);
      previousLog = log;
      Atomics.wait(state, STOP, 0, wait);
    }
  } finally {
    database.close();
  }
}
try {
  if (Atomics.load(state, STOP) === 0) checkpointUntilStopped();
} finally {
  signalClosed();
}
`;

/**
 * Moves WAL checkpoints off the event loop. With SQLite's automatic checkpoint, the commit
 * that crosses 1 000 WAL pages copies them into the database file and fsyncs it on the
 * serving thread: about 30 µs per config poll on average and 30–40 ms stalls. Here a worker
 * thread with its own connection runs PASSIVE checkpoints as soon as there are new frames, so
 * the serving connection's commits do not pay for them. The serving connection keeps an
 * automatic checkpoint at 4 000 pages as a backstop: when the worker has not caught up with
 * the last frames by then, the serving connection copies the rest (a few pages) and the WAL
 * restarts; it goes back to SQLite's default if the worker fails.
 * Durability is unchanged: a commit is as durable as before (synchronous=NORMAL, WAL).
 */
export function checkpointInBackground(database: SQLite.Database, file: string, { shortestWaitMs = SHORTEST_WAIT_MS } = {}): void {
  // [stop requested, worker's connection closed]
  const state = new Int32Array(new SharedArrayBuffer(8));
  let workerGone = false;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    // None of the process's flags: the source is CommonJS, which --input-type=module would evaluate as a module, where it fails.
    execArgv: [],
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, state: state.buffer, shortestWait: shortestWaitMs, longestWait: Math.max(LONGEST_WAIT_MS, shortestWaitMs) },
  });
  worker.unref();
  const restoreDefault = (error: Error) => {
    process.emitWarning(`SQLite checkpoints are back on the serving connection: the checkpoint worker failed (${error.message})`);
    if (database.open) database.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  };
  worker.on('error', restoreDefault);
  worker.on('exit', () => (workerGone = true));
  database.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);

  const close = database.close.bind(database);
  // The worker's connection is closed before the serving one, so that when close() returns no
  // connection is left to touch the files (the last one to close checkpoints and removes the WAL).
  database.close = () => {
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
    if (!workerGone) Atomics.wait(state, 1, 0, CLOSE_WAIT_MS);
    return close();
  };
}
