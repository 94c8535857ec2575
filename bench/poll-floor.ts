/**
 * The floor of a steady SQLite poll on this host: what any server costs that answers the poll
 * over HTTP and keeps keyfleet's durability, measured beside keyfleet and a bare node:http
 * server in rotating rounds. The floor server is node:http and better-sqlite3 and nothing
 * else: it takes the serial number from the path and the reported values from the query,
 * and, for the polls that arrive in one event-loop turn (up to 64, as keyfleet batches them),
 * in one transaction reads each OKM's desired settings and upserts its poll row, then answers
 * `{}` once the transaction has committed. Same database file (a copy of one seeded fleet),
 * same pragmas and the same background checkpoint worker as keyfleet: it has no framework, no
 * resolvers, no rate limits, no logging and no metrics. What keyfleet costs above it is the
 * part its own code can still win back; the floor itself is the host's.
 *
 *   npm run bench:poll-floor -- [--rounds 4] [--duration 10] [--connections 100] [--okms 100000]
 *
 * Prints each round's CPU per poll (server process, all threads, from /proc) and the medians:
 * the floor as a multiple of bare, keyfleet as a multiple of the floor.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { requestPaths, seedFleet } from './fleet.ts';
import { REPO_ROOT, buildServer, freePort, measure, median, pathsLoad, startBare, startKeyfleet, stop, waitUntilServing, type Figures } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    okms: { type: 'string', default: '100000' },
  },
});
const ROUNDS = Number(options.rounds);
const OKM_COUNT = Number(options.okms);

/**
 * The floor server. The SQL is written out here rather than taken from keyfleet's queries: it
 * is the least a poll must read and write, and keyfleet's own statements are what it is
 * compared with. The pragmas are keyfleet's (src/db/dialects/sqlite.ts).
 */
const FLOOR_SERVER = `
import http from 'node:http';
import { createRequire } from 'node:module';
const require = createRequire(process.env.FLOOR_ROOT + '/package.json');
const SQLite = require('better-sqlite3');
const { checkpointInBackground } = await import(process.env.FLOOR_ROOT + '/dist/src/db/dialects/sqlite-checkpointer.js');
const file = process.env.FLOOR_DB;
const database = new SQLite(file);
database.pragma('journal_mode = WAL');
database.pragma('synchronous = NORMAL');
database.pragma('foreign_keys = ON');
database.pragma('busy_timeout = 5000');
database.pragma('mmap_size = ' + 2 ** 31);
checkpointInBackground(database, file);
const read = database.prepare(\`SELECT cache_mode, key_checkout_window_time, key_checkout_window_contact, auditing_enabled,
  asset_list_digest, users_assets_digest, polling_interval, kas_firmware, batch_key_firmware, wireless_key_firmware, status_urls
  FROM okms WHERE serial_number = ?\`);
const upsert = database.prepare(\`INSERT INTO okm_polls (serial_number, last_sync_time, polls, last_ip, reported)
  VALUES (?, ?, 1, ?, ?)
  ON CONFLICT (serial_number) DO UPDATE SET polls = okm_polls.polls + 1, last_sync_time = excluded.last_sync_time,
  last_ip = excluded.last_ip, reported = excluded.reported RETURNING polls\`);
const record = database.transaction((polls) => {
  for (const poll of polls) poll.known = read.get(poll.serialNumber) !== undefined && upsert.get(poll.serialNumber, poll.now, poll.ip, poll.reported) !== undefined;
});
const MAX_BATCH = 64;
let queue = [];
function flush() {
  const batch = queue.slice(0, MAX_BATCH);
  queue = queue.slice(MAX_BATCH);
  if (queue.length > 0) setImmediate(flush);
  record(batch);
  for (const poll of batch) {
    poll.response.writeHead(poll.known ? 200 : 404, { 'content-type': 'application/json; charset=utf-8' });
    poll.response.end(poll.known ? '{}' : '{"error":"OKM not found"}');
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
process.on('SIGTERM', () => {
  database.close();
  process.exit(0);
});
`;

/** Starts the floor server on the fleet in `dataDir`; ready once it answers a poll of `readyPath`. */
async function startFloor(dataDir: string, readyPath: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--input-type=module', '-e', FLOOR_SERVER], {
    env: { ...process.env, PORT: String(port), FLOOR_ROOT: REPO_ROOT, FLOOR_DB: path.join(dataDir, 'keyfleet.sqlite') },
    stdio: 'inherit',
  });
  await waitUntilServing(`http://127.0.0.1:${port}${readyPath}`, child);
  return { port, child };
}

buildServer();
const floorDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-floor-'));
const keyfleetDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-floor-'));
await seedFleet({ DATA_DIR: floorDir }, OKM_COUNT);
fs.cpSync(floorDir, keyfleetDir, { recursive: true });
const paths = requestPaths('/api/v1/config', OKM_COUNT);
const load = pathsLoad(paths, Number(options.connections), Number(options.duration));

const bare = await startBare();
const floor = await startFloor(floorDir, paths[0]!);
const keyfleet = await startKeyfleet({ DATA_DIR: keyfleetDir }, { built: true });
try {
  const targets = [
    { name: 'bare node:http', ...bare },
    { name: 'floor (node:http + better-sqlite3)', ...floor },
    { name: 'keyfleet sqlite', ...keyfleet },
  ];
  // One warm-up each, then the rounds: each target measured once a round, the order rotating.
  for (const target of targets) await measure(target.name, target.port, load, { warmUpSeconds: 0, server: target.child });
  const rounds: Figures[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const figures = new Map<string, Figures>();
    for (let turn = 0; turn < targets.length; turn++) {
      const target = targets[(turn + round) % targets.length]!;
      figures.set(target.name, await measure(target.name, target.port, load, { warmUpSeconds: 0, server: target.child }));
    }
    const [bareFigures, floorFigures, keyfleetFigures] = targets.map((target) => figures.get(target.name)!) as [Figures, Figures, Figures];
    rounds.push([bareFigures, floorFigures, keyfleetFigures]);
    const cpu = (entry: Figures) => entry.cpuMicrosPerRequest!;
    console.log(
      `round ${round + 1}: bare ${Math.round(cpu(bareFigures))} µs; floor ${Math.round(cpu(floorFigures))} µs (${(cpu(floorFigures) / cpu(bareFigures)).toFixed(2)} × bare, ` +
        `${Math.round(floorFigures.requestsPerSecond)} polls/s, p99 ${floorFigures.p99} ms); keyfleet ${Math.round(cpu(keyfleetFigures))} µs (${(cpu(keyfleetFigures) / cpu(floorFigures)).toFixed(2)} × floor, ` +
        `${Math.round(keyfleetFigures.requestsPerSecond)} polls/s, p99 ${keyfleetFigures.p99} ms)`,
    );
  }
  const cpuOf = (index: number) => rounds.map((figures) => figures[index]!.cpuMicrosPerRequest!);
  const ratioOf = (index: number, to: number) => rounds.map((figures) => figures[index]!.cpuMicrosPerRequest! / figures[to]!.cpuMicrosPerRequest!);
  console.log(`\nmedians over ${ROUNDS} rounds of ${options.duration} s, ${OKM_COUNT} OKMs, ${options.connections} connections:`);
  console.log(`  bare node:http: ${Math.round(median(cpuOf(0)))} µs a request`);
  console.log(`  floor: ${Math.round(median(cpuOf(1)))} µs a poll, ${median(ratioOf(1, 0)).toFixed(2)} × bare`);
  console.log(`  keyfleet: ${Math.round(median(cpuOf(2)))} µs a poll, ${median(ratioOf(2, 1)).toFixed(2)} × floor, ${median(ratioOf(2, 0)).toFixed(2)} × bare`);
  const above = rounds.map((figures) => figures[2]!.cpuMicrosPerRequest! - figures[1]!.cpuMicrosPerRequest!);
  console.log(`  keyfleet − floor, per round: ${above.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(above))} µs`);
} finally {
  await Promise.all([stop(bare.child), stop(floor.child), stop(keyfleet.child)]);
  for (const dir of [floorDir, keyfleetDir]) fs.rmSync(dir, { recursive: true, force: true });
}
