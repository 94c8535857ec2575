/**
 * The floor server (bench/poll-floor.ts): node:http and the database driver answering the poll
 * with keyfleet's durability, and nothing else. Its script is run by `node --input-type=module
 * -e`, so that bench/poll-floor.ts times it beside keyfleet and bench/poll-instructions.ts counts
 * its instructions beside keyfleet's.
 */
import path from 'node:path';
import { FLOOR_POSTGRES_STATEMENT, FLOOR_SETTINGS } from './floor-statements.ts';
import type { BenchDatabase } from './harness.ts';

/**
 * What both floor servers share: the HTTP side and the batching. `recordBatch(polls)` sets
 * each poll's `known` and settles once the batch is committed; BATCHES_AT_ONCE batches run at
 * a time, and a batch holds each serial number once (a second poll of one waits for the next).
 */
const FLOOR_HTTP = `
const MAX_BATCH = 64;
let queue = [];
let running = 0;
function takeBatch() {
  const batch = [];
  const serials = new Set();
  const rest = [];
  for (const poll of queue) {
    if (batch.length < MAX_BATCH && !serials.has(poll.serialNumber)) {
      serials.add(poll.serialNumber);
      batch.push(poll);
    } else rest.push(poll);
  }
  queue = rest;
  return batch;
}
function flush() {
  while (queue.length > 0 && running < BATCHES_AT_ONCE) {
    const batch = takeBatch();
    running += 1;
    Promise.resolve(recordBatch(batch)).then(
      () => {
        for (const poll of batch) {
          poll.response.writeHead(poll.known ? 200 : 404, { 'content-type': 'application/json; charset=utf-8' });
          poll.response.end(poll.known ? '{}' : '{"error":"OKM not found"}');
        }
      },
      (error) => {
        for (const poll of batch) {
          poll.response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          poll.response.end(JSON.stringify({ error: String(error) }));
        }
      },
    ).finally(() => {
      running -= 1;
      flush();
    });
  }
}
http
  .createServer((request, response) => {
    const queryStart = request.url.indexOf('?');
    const pathname = queryStart === -1 ? request.url : request.url.slice(0, queryStart);
    const query = Object.fromEntries(new URLSearchParams(queryStart === -1 ? '' : request.url.slice(queryStart + 1)));
    request.resume();
    queue.push({ serialNumber: pathname.slice(pathname.lastIndexOf('/') + 1), now: Date.now(), ip: request.socket.remoteAddress, reported: JSON.stringify(query), response });
    if (queue.length === 1) setImmediate(flush);
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', async () => {
  await close();
  process.exit(0);
});
`;

/** What each floor server's script begins with: the drivers come from this checkout's node_modules. */
const FLOOR_PRELUDE = `
import http from 'node:http';
import { createRequire } from 'node:module';
const require = createRequire(process.env.FLOOR_ROOT + '/package.json');
`;

/** keyfleet's pragmas (src/db/dialects/sqlite.ts) and checkpoint worker; the statements run synchronously, one batch at a time. */
const SQLITE_FLOOR = `
const SQLite = require('better-sqlite3');
const { checkpointInBackground } = await import(process.env.FLOOR_ROOT + '/dist/src/db/dialects/sqlite-checkpointer.js');
const file = process.env.FLOOR_DATABASE;
const database = new SQLite(file);
database.pragma('journal_mode = WAL');
database.pragma('synchronous = NORMAL');
database.pragma('foreign_keys = ON');
database.pragma('busy_timeout = 5000');
database.pragma('mmap_size = ' + 2 ** 31);
checkpointInBackground(database, file);
const read = database.prepare(\`SELECT ${FLOOR_SETTINGS} FROM okms WHERE serial_number = ?\`);
const upsert = database.prepare(\`INSERT INTO okm_polls (serial_number, last_sync_time, polls, last_ip, reported) VALUES (?, ?, 1, ?, ?)
  ON CONFLICT (serial_number) DO UPDATE SET polls = okm_polls.polls + 1, last_sync_time = excluded.last_sync_time,
  last_ip = excluded.last_ip, reported = excluded.reported RETURNING polls\`);
const BATCHES_AT_ONCE = 1;
const recordBatch = database.transaction((polls) => {
  for (const poll of polls) poll.known = read.get(poll.serialNumber) !== undefined && upsert.get(poll.serialNumber, poll.now, poll.ip, poll.reported) !== undefined;
});
const close = async () => database.close();
`;

/** One prepared statement a batch, its own transaction, on a pool of two connections (keyfleet's batchesAtOnce). */
const POSTGRES_FLOOR = `
const pg = require('pg');
const pool = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE, max: 2 });
const BATCHES_AT_ONCE = 2;
const text = ${JSON.stringify(FLOOR_POSTGRES_STATEMENT)};
async function recordBatch(polls) {
  const { rows } = await pool.query({
    name: 'floor_poll',
    text,
    values: [polls.map((poll) => poll.serialNumber), polls.map((poll) => poll.now), polls.map((poll) => poll.ip), polls.map((poll) => poll.reported)],
  });
  const known = new Set(rows.map((row) => row.serial_number));
  for (const poll of polls) poll.known = known.has(poll.serialNumber);
}
const close = () => pool.end();
`;

/** node's arguments that run the floor server of `database` (its environment: floorServerEnv, and PORT). */
export const floorServerArguments = (database: Pick<BenchDatabase, 'name'>): string[] => [
  '--input-type=module',
  '-e',
  FLOOR_PRELUDE + (database.name === 'sqlite' ? SQLITE_FLOOR : POSTGRES_FLOOR) + FLOOR_HTTP,
];

/** The floor server's environment besides PORT: the checkout whose drivers it loads (`root`), and its database. */
export const floorServerEnv = (database: BenchDatabase, root: string): Record<string, string> => ({
  FLOOR_ROOT: root,
  FLOOR_DATABASE: database.name === 'sqlite' ? path.join(database.env.DATA_DIR!, 'keyfleet.sqlite') : database.env.DATABASE_URL!,
});
