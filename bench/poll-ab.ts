/**
 * The steady poll of two checkouts, measured against each other in alternating rounds: this
 * one and `--base` (another worktree of the repository, say `git worktree add ../base HEAD~3`,
 * with node_modules linked or installed). Each serves its own fleet (SQLite, or with
 * `--postgres` a PostgreSQL schema of its own), seeded by its own bench/fleet.ts; a bare
 * node:http server gets the same requests. The three run side by side and take turns: every
 * round measures each for `--duration` s, in an order that rotates from round to round, so
 * that a host that speeds up or slows down during the run shifts them alike.
 *
 *   npm run bench:poll-ab -- --base ../base [--postgres] [--rounds 5] [--duration 10] [--okms 100000]
 *
 * Prints each round's CPU per poll (server process, all threads, from /proc; with --postgres
 * the PostgreSQL processes' added) and its multiple of the bare server's in that round, then
 * the median of each and of the per-round difference.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { inStepPaths, requestPaths } from './fleet.ts';
import { REPO_ROOT, buildServer, measure, seedCheckout, median, pathsLoad, startBare, startKeyfleet, stop, withFreshDatabase, type BenchDatabase, type Figures } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    okms: { type: 'string', default: '100000' },
    postgres: { type: 'boolean', default: false },
  },
});
if (!options.base) throw new Error('--base: the other checkout to compare with, e.g. --base ../base');
const BASE_DIR = path.resolve(options.base);
const ROUNDS = Number(options.rounds);
const OKM_COUNT = Number(options.okms);

const DATABASE: BenchDatabase['name'] = options.postgres ? 'postgres' : 'sqlite';

const checkouts = [
  { name: 'this checkout', dir: REPO_ROOT },
  { name: `base (${path.relative(REPO_ROOT, BASE_DIR) || BASE_DIR})`, dir: BASE_DIR },
];
const postgres = DATABASE === 'postgres';
// CPU per poll: the server's, and on PostgreSQL the database's added.
const cpu = (entry: Figures) => entry.cpuMicrosPerRequest! + (entry.postgresCpuMicrosPerRequest ?? 0);

async function compare(databases: readonly BenchDatabase[]): Promise<void> {
  checkouts.forEach(({ dir }, index) => {
    buildServer(dir);
    seedCheckout(dir, databases[index]!, OKM_COUNT);
  });
  // After the seeding: the devices report the time the paths are made.
  const load = pathsLoad(requestPaths('/api/v1/config', OKM_COUNT), Number(options.connections), Number(options.duration));
  const bare = await startBare();
  const servers = await Promise.all(checkouts.map(({ dir }, index) => startKeyfleet(databases[index]!.env, { built: true, dir })));
  try {
    // Each server must serve the fleet the paths expect: a poll of an in-step device is answered {}.
    for (const [index, server] of servers.entries()) {
      for (const inStep of inStepPaths('/api/v1/config', 20)) {
        const body = await (await fetch(`http://127.0.0.1:${server.port}${inStep}`)).text();
        if (body !== '{}') throw new Error(`${checkouts[index]!.name}: ${inStep} was answered ${body.slice(0, 200)}, not {}: its fleet is not the one the paths expect`);
      }
    }
    const targets = [
      { name: 'bare node:http', port: bare.port, child: bare.child },
      ...checkouts.map(({ name }, index) => ({ name: `keyfleet ${DATABASE}, ${name}`, port: servers[index]!.port, child: servers[index]!.child })),
    ];
    const measureTarget = (target: (typeof targets)[number]) =>
      measure(target.name, target.port, load, { warmUpSeconds: 0, server: target.child, postgres: postgres && target !== targets[0] });
    // One warm-up each, then the rounds: each target measured once a round, the order rotating.
    for (const target of targets) await measureTarget(target);
    const rounds: Figures[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
      const figures = new Map<string, Figures>();
      for (const target of order) figures.set(target.name, await measureTarget(target));
      rounds.push(targets.map((target) => figures.get(target.name)!));
      const [bareFigures, ...keyfleet] = rounds.at(-1)!;
      const cpuText = (entry: Figures) =>
        entry.postgresCpuMicrosPerRequest === undefined ? `${Math.round(cpu(entry))} µs` : `${Math.round(entry.cpuMicrosPerRequest!)} + PostgreSQL ${Math.round(entry.postgresCpuMicrosPerRequest)} µs`;
      console.log(
        `round ${round + 1}: ` +
          [bareFigures!, ...keyfleet]
            .map((entry) => `${entry.target} ${cpuText(entry)}${entry === bareFigures ? '' : ` (${(cpu(entry) / cpu(bareFigures!)).toFixed(2)} × bare, ${Math.round(entry.requestsPerSecond)} polls/s, p99 ${entry.p99} ms${entry.requestsPerCommit === undefined ? '' : `, ${entry.requestsPerCommit.toFixed(1)} polls a commit`})`}`)
            .join('; '),
      );
    }
    const cpuOf = (index: number) => rounds.map((figures) => cpu(figures[index]!));
    const ratioOf = (index: number) => rounds.map((figures) => cpu(figures[index]!) / cpu(figures[0]!));
    console.log(`\nmedians over ${ROUNDS} rounds of ${options.duration} s, ${OKM_COUNT} OKMs, ${options.connections} connections${postgres ? ' (CPU: server + PostgreSQL)' : ''}:`);
    for (const [index, target] of targets.entries()) {
      const perCommit = rounds.flatMap((figures) => figures[index]!.requestsPerCommit ?? []);
      console.log(
        `  ${target.name}: ${Math.round(median(cpuOf(index)))} µs a poll` +
          (index === 0 ? '' : `, ${median(ratioOf(index)).toFixed(2)} × bare`) +
          (perCommit.length === 0 ? '' : `, ${median(perCommit).toFixed(1)} polls a commit`),
      );
    }
    const differences = rounds.map((figures) => cpu(figures[1]!) - cpu(figures[2]!));
    console.log(`  this checkout − base, per round: ${differences.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(differences))} µs`);
  } finally {
    await Promise.all([stop(bare.child), ...servers.map(({ child }) => stop(child))]);
  }
}

// Each checkout on a fresh database of its own, both removed afterwards.
await withFreshDatabase(DATABASE, (mine) => withFreshDatabase(DATABASE, (base) => compare([mine, base])));
