/**
 * The floor of a steady poll on this host: what any server costs that answers the poll over
 * HTTP with keyfleet's durability, measured beside keyfleet and a bare node:http server in
 * rotating rounds. The floor server is node:http and the database driver and nothing else: it
 * takes the serial number from the path and the reported values from the query, records the
 * polls that arrive in one event-loop turn together (up to 64, as keyfleet batches them) and
 * answers `{}` once they are committed:
 * - SQLite: in one transaction, each OKM's settings read and its poll row upserted, with
 *   keyfleet's pragmas and background checkpoint worker;
 * - PostgreSQL: one statement for the batch (the upsert of the poll rows and the read of the
 *   settings, by arrays), a prepared statement, at most two batches at a time, each commit
 *   durable (synchronous_commit on), as keyfleet's poll transactions run.
 * It has no framework, no resolvers, no rate limits, no logging and no metrics. What keyfleet
 * costs above it is the part its own code can still win back; the floor itself is the host's.
 * Each server has its own fleet, seeded the same way. On SQLite a copied file is not the same:
 * a server on a fresh copy of the seeded file cost 15–25 % more CPU a poll, for minutes, than
 * the same server on the file SQLite wrote (bench/results/poll-floor-copied-file.txt).
 *
 *   npm run bench:poll-floor -- [--sqlite] [--postgres] [--rounds 4] [--duration 10] [--slices 1]
 *                               [--connections 100] [--okms 100000] [--perf DIR] [--floor-twice]
 *                               [--open-loop none|2000,5000]
 *
 * Prints each round's CPU per poll (server process, all threads, from /proc; on PostgreSQL
 * also the postgres processes') and the medians: the floor as a multiple of bare, keyfleet
 * as a multiple of the floor. With neither --sqlite nor --postgres, SQLite only.
 *
 * A fourth target in the rounds is keyfleet's bootstrap route, given the same requests (the
 * same serial numbers and queries, under the bootstrap path): it passes every hook a poll does
 * (rate limits, request log, metrics, validation) and reads no database. Its cost above bare is
 * the framework's share of keyfleet above the floor, printed beside the target's allowance
 * (0.3 × the floor): what the poll's own code and statements may cost is what is left.
 *
 * `--slices N`: each target's time in a round is cut into N slices, and the targets take turns
 * slice by slice (the same load, continued), so that the ratios of a round compare servers
 * measured seconds apart rather than a whole turn apart: on a shared host whose speed changes
 * over tens of seconds, one server's 10 s can fall in a slow spell and the other's not. A
 * round's CPU a poll is over all its slices' polls; its p99, the slices' median. Each slice
 * opens the load's connections anew on a server idle meanwhile; on one host, SQLite's ratio
 * read the same in slices and in whole turns (bench/RESULTS.md, floor-sliced).
 *
 * `--floor-twice`: an A/A check of the comparison itself. keyfleet's place in the rounds goes to
 * a second floor server on keyfleet's database (printed as keyfleet; the bootstrap's turn goes
 * to bare, so the framework line then means nothing). Its ratio to the floor should be 1
 * within the host's noise: a ratio away from 1 is the set-up's, not keyfleet's (how each
 * database was made, say).
 *
 * `--open-loop RATES`: after the rounds, bare, the floor and keyfleet each get the rounds' polls
 * (all in step, where `bench:poll --open-loop` sends its mix with some corrections) on the same
 * fixed schedule at each rate (bench/open-loop.ts), in `--rounds` rounds whose order rotates;
 * printed: each one's latency from due time, and the medians of the p99s with keyfleet's over
 * the floor's. The floor's p99 is what a server with keyfleet's durability gets at that rate on
 * this host, generator included: the measure beside which keyfleet's is read.
 *
 * `--perf DIR`: after the rounds, one more measurement of each server under Linux `perf record`
 * (sampling its threads, JavaScript named through node's --perf-basic-prof), written to
 * DIR/<database>-<server>.data with the number of requests it answered beside it, so that where
 * keyfleet's CPU above the floor goes (JavaScript, SQLite, the garbage collector, the kernel) is
 * seen per poll: `perf report -i FILE --no-children --sort dso,sym`.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { requestPaths, seedFleet } from './fleet.ts';
import { floorServerArguments, floorServerEnv } from './floor-server.ts';
import { measureOpenLoop, openLoopLine, openLoopRates } from './open-loop.ts';
import {
  BENCH_OPTIONS,
  REPO_ROOT,
  buildServer,
  freePort,
  combineSlices,
  measure,
  median,
  pathsLoad,
  startBare,
  startKeyfleet,
  stop,
  waitUntilServing,
  withFreshDatabase,
  type BenchDatabase,
  type Figures,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    rounds: { type: 'string', default: '4' },
    slices: { type: 'string', default: '1' },
    okms: { type: 'string', default: '100000' },
    perf: { type: 'string' },
    'floor-twice': { type: 'boolean', default: false },
    'open-loop': { type: 'string', default: 'none' },
  },
});
const OPEN_LOOP_RATES = openLoopRates(options['open-loop']);
const ROUNDS = Number(options.rounds);
const SLICES = Number(options.slices);
if (!Number.isInteger(SLICES) || SLICES < 1) throw new Error(`--slices: expected a whole number from 1, got "${options.slices}"`);
const OKM_COUNT = Number(options.okms);
// Every server this bench starts inherits it: perf then names JavaScript functions by their source.
if (options.perf) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof`.trim();

/** Starts the floor server of `database`; ready once it answers a poll of `readyPath`. */
async function startFloor(database: BenchDatabase, readyPath: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, floorServerArguments(database), { env: { ...process.env, ...floorServerEnv(database, REPO_ROOT), PORT: String(port) }, stdio: 'inherit' });
  await waitUntilServing(`http://127.0.0.1:${port}${readyPath}`, child);
  return { port, child };
}

/** One measurement of a server under `perf record` (its threads, 999 samples a second), into the --perf directory. */
async function recordPerf(name: string, server: ChildProcess, run: () => Promise<Figures>): Promise<void> {
  fs.mkdirSync(options.perf!, { recursive: true });
  const file = path.join(options.perf!, `${name}.data`);
  const perf = spawn('perf', ['record', '--quiet', '-F', '999', '-g', '-o', file, '-p', String(server.pid)], { stdio: 'inherit' });
  const exited = new Promise((resolve) => perf.once('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const figures = await run();
  perf.kill('SIGINT');
  await exited;
  const requests = Math.round(figures.requestsPerSecond * Number(options.duration));
  fs.writeFileSync(path.join(options.perf!, `${name}.txt`), `${requests} requests, ${Math.round(figures.cpuMicrosPerRequest ?? 0)} µs a request\n`);
  console.log(`  perf: ${file} (${requests} requests)`);
}

/** A server the rounds measure: its name, where it listens, and whether its CPU includes PostgreSQL's. */
interface Target {
  name: string;
  port: number;
  child: ChildProcess;
  database: boolean;
}

/** The open loop at each of OPEN_LOOP_RATES on `targets` (bare, the floor, keyfleet), in rounds of rotating order. */
async function openLoopRounds(name: string, targets: readonly [Target, Target, Target], paths: readonly string[], postgres: boolean): Promise<void> {
  for (const rate of OPEN_LOOP_RATES) {
    const p99s = targets.map((): number[] => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let turn = 0; turn < targets.length; turn++) {
        const index = (turn + round) % targets.length;
        const target = targets[index]!;
        const figures = await measureOpenLoop(target.name, target.port, paths, {
          rate,
          seconds: Number(options.duration),
          connections: Number(options.connections),
          server: target.child,
          postgres: postgres && target.database,
        });
        console.log(`${name} open-loop round ${round + 1}: ${openLoopLine(figures)}`);
        p99s[index]!.push(figures.p99);
      }
    }
    const [bare, floor, keyfleet] = p99s as [number[], number[], number[]];
    const ratios = keyfleet.map((p99, round) => p99 / floor[round]!);
    console.log(
      `${name}, open loop ${rate}/s, p99 from due time, medians over ${ROUNDS} rounds: bare ${median(bare).toFixed(1)} ms, floor ${median(floor).toFixed(1)} ms, ` +
        `keyfleet ${median(keyfleet).toFixed(1)} ms; keyfleet over the floor, per round: ${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}; median ${median(ratios).toFixed(2)} ×\n`,
    );
  }
}

/** The rounds on one database: bare, the floor and keyfleet, each on a fleet of its own, seeded alike. */
async function compare(floorDatabase: BenchDatabase, keyfleetDatabase: BenchDatabase): Promise<void> {
  const { name } = floorDatabase;
  await seedFleet(floorDatabase.env, OKM_COUNT);
  await seedFleet(keyfleetDatabase.env, OKM_COUNT);
  const paths = requestPaths('/api/v1/config', OKM_COUNT);
  const load = pathsLoad(paths, Number(options.connections), Number(options.duration));
  const bootstrapLoad = pathsLoad(
    paths.map((poll) => poll.replace('/api/v1/config/', '/embeddedv1/kas/config/')),
    Number(options.connections),
    Number(options.duration),
  );
  const postgres = name === 'postgres';

  // Each server is stopped at the end, also when a later one fails to start.
  const started: ChildProcess[] = [];
  const keep = <T extends { child: ChildProcess }>(server: T) => (started.push(server.child), server);
  try {
    const bare = keep(await startBare());
    const floor = keep(await startFloor(floorDatabase, paths[0]!));
    const keyfleet = keep(options['floor-twice'] ? await startFloor(keyfleetDatabase, paths[0]!) : await startKeyfleet(keyfleetDatabase.env, { built: true }));
    const targets: (Target & { load: typeof load })[] = [
      { name: 'bare node:http', ...bare, load, database: false },
      { name: `floor ${name}`, ...floor, load, database: true },
      { name: `keyfleet ${name}`, ...keyfleet, load, database: true },
      // A floor server answers any path with a poll of its database: in the A/A check the
      // bootstrap's turn goes to bare, lest it poll the second floor's database uncounted.
      { name: `keyfleet ${name} bootstrap`, ...(options['floor-twice'] ? bare : keyfleet), load: bootstrapLoad, database: false },
    ];
    const measureTarget = (target: (typeof targets)[number], seconds = target.load.seconds) =>
      measure(target.name, target.port, { ...target.load, seconds }, { warmUpSeconds: 0, server: target.child, postgres: postgres && target.database });
    // One warm-up each, then the rounds: each target measured once a round, the order rotating.
    for (const target of targets) await measureTarget(target);
    const rounds: [Figures, Figures, Figures, Figures][] = [];
    // CPU per poll: the server's, and on PostgreSQL the database's added.
    const cpu = (entry: Figures) => entry.cpuMicrosPerRequest! + (entry.postgresCpuMicrosPerRequest ?? 0);
    // How many polls shared a commit: a batch's fixed cost is shared by that many.
    const commitText = (entry: Figures) => (entry.requestsPerCommit === undefined ? '' : `, ${entry.requestsPerCommit.toFixed(1)} polls a commit`);
    const cpuText = (entry: Figures) => (entry.postgresCpuMicrosPerRequest === undefined ? `${Math.round(cpu(entry))} µs` : `${Math.round(entry.cpuMicrosPerRequest!)} + PostgreSQL ${Math.round(entry.postgresCpuMicrosPerRequest)} µs`);
    for (let round = 0; round < ROUNDS; round++) {
      // With slices, the targets take turns within the round too, so that a change of the host's
      // speed that lasts seconds falls on each alike; every other slice in the reverse order, so
      // that the floor and keyfleet each follow a server with a database and one without alike
      // (what ran just before weighs on a slice of 2 s: bench/RESULTS.md, floor-sliced).
      const sliceSeconds = Number(options.duration) / SLICES;
      const slices = new Map<string, Figures[]>(targets.map((target) => [target.name, []]));
      const turns = targets.map((_target, turn) => targets[(turn + round) % targets.length]!);
      for (let slice = 0; slice < SLICES; slice++) {
        for (const target of slice % 2 === 0 ? turns : [...turns].reverse()) slices.get(target.name)!.push(await measureTarget(target, sliceSeconds));
      }
      const figures = new Map([...slices].map(([name, measured]) => [name, combineSlices(measured, sliceSeconds)]));
      const [bareFigures, floorFigures, keyfleetFigures, bootstrapFigures] = targets.map((target) => figures.get(target.name)!) as [Figures, Figures, Figures, Figures];
      rounds.push([bareFigures, floorFigures, keyfleetFigures, bootstrapFigures]);
      console.log(
        `${name} round ${round + 1}: bare ${Math.round(cpu(bareFigures))} µs; floor ${cpuText(floorFigures)} (${(cpu(floorFigures) / cpu(bareFigures)).toFixed(2)} × bare, ` +
          `${Math.round(floorFigures.requestsPerSecond)} polls/s, p99 ${floorFigures.p99} ms${commitText(floorFigures)}, non-2xx ${floorFigures.non2xx}); keyfleet ${cpuText(keyfleetFigures)} ` +
          `(${(cpu(keyfleetFigures) / cpu(floorFigures)).toFixed(2)} × floor, ${Math.round(keyfleetFigures.requestsPerSecond)} polls/s, p99 ${keyfleetFigures.p99} ms${commitText(keyfleetFigures)}, non-2xx ${keyfleetFigures.non2xx}); ` +
          `keyfleet's bootstrap ${Math.round(cpu(bootstrapFigures))} µs (non-2xx ${bootstrapFigures.non2xx})`,
      );
    }
    const cpuOf = (index: number) => rounds.map((figures) => cpu(figures[index]!));
    const ratioOf = (index: number, to: number) => rounds.map((figures) => cpu(figures[index]!) / cpu(figures[to]!));
    console.log(`\n${name}: medians over ${ROUNDS} rounds of ${options.duration} s${SLICES > 1 ? ` (each in ${SLICES} slices taken in turn; p99: the slices' median)` : ''}, ${OKM_COUNT} OKMs, ${options.connections} connections${postgres ? ' (CPU: server + PostgreSQL)' : ''}:`);
    console.log(`  bare node:http: ${Math.round(median(cpuOf(0)))} µs a request`);
    const perCommitOf = (index: number) => {
      const values = rounds.flatMap((figures) => figures[index]!.requestsPerCommit ?? []);
      return values.length === 0 ? '' : `, ${median(values).toFixed(1)} polls a commit`;
    };
    console.log(`  floor: ${Math.round(median(cpuOf(1)))} µs a poll, ${median(ratioOf(1, 0)).toFixed(2)} × bare${perCommitOf(1)}`);
    console.log(`  keyfleet: ${Math.round(median(cpuOf(2)))} µs a poll, ${median(ratioOf(2, 1)).toFixed(2)} × floor, ${median(ratioOf(2, 0)).toFixed(2)} × bare${perCommitOf(2)}`);
    const above = rounds.map((figures) => cpu(figures[2]) - cpu(figures[1]));
    console.log(`  keyfleet − floor, per round: ${above.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(above))} µs`);
    const framework = rounds.map((figures) => cpu(figures[3]) - cpu(figures[0]));
    const allowance = rounds.map((figures) => 0.3 * cpu(figures[1]));
    console.log(`  keyfleet's framework (its bootstrap route − bare), per round: ${framework.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(framework))} µs`);
    console.log(`  the target's allowance above the floor (0.3 × floor), per round: ${allowance.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(allowance))} µs`);
    const rest = rounds.map((figures, round) => above[round]! - framework[round]!);
    console.log(`  keyfleet − floor − framework (the poll's own code and statements above the floor's): median ${Math.round(median(rest))} µs\n`);
    if (OPEN_LOOP_RATES.length > 0) await openLoopRounds(name, [targets[0]!, targets[1]!, targets[2]!], paths, postgres);
    if (options.perf) for (const target of targets.slice(0, 3)) await recordPerf(`${name}-${target.name.split(' ')[0]}`, target.child, () => measureTarget(target));
  } finally {
    await Promise.all(started.map(stop));
  }
}

buildServer();
for (const name of options.postgres ? (options.sqlite ? (['sqlite', 'postgres'] as const) : (['postgres'] as const)) : (['sqlite'] as const)) {
  await withFreshDatabase(name, (floorDatabase) => withFreshDatabase(name, (keyfleetDatabase) => compare(floorDatabase, keyfleetDatabase)));
}
