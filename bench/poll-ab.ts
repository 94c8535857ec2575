/**
 * The steady poll of two checkouts, measured against each other in alternating rounds: this
 * one and `--base` (another worktree of the repository, say `git worktree add ../base HEAD~3`,
 * with node_modules linked or installed). Each serves its own SQLite fleet, seeded by its own
 * bench/fleet.ts; a bare node:http server gets the same requests. The three run side by side
 * and take turns: every round measures each for `--duration` s, in an order that rotates from
 * round to round, so that a host that speeds up or slows down during the run shifts them alike.
 *
 *   npm run bench:poll-ab -- --base ../base [--rounds 5] [--duration 10] [--okms 100000]
 *
 * Prints each round's CPU per poll (server process, all threads, from /proc) and its multiple
 * of the bare server's in that round, then the median of each and of the per-round difference.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { requestPaths } from './fleet.ts';
import { REPO_ROOT, buildServer, measure, median, pathsLoad, startBare, startKeyfleet, stop, type Figures } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    okms: { type: 'string', default: '100000' },
  },
});
if (!options.base) throw new Error('--base: the other checkout to compare with, e.g. --base ../base');
const BASE_DIR = path.resolve(options.base);
const ROUNDS = Number(options.rounds);
const OKM_COUNT = Number(options.okms);

/** Seeds a fresh SQLite data directory with the fleet of the checkout `dir`, by that checkout's own seeding (its schema may differ from this one's). */
function seededDataDir(dir: string): string {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-ab-'));
  const script = `const { seedFleet } = await import(${JSON.stringify(path.join(dir, 'bench/fleet.ts'))}); await seedFleet({ DATA_DIR: ${JSON.stringify(dataDir)} }, ${OKM_COUNT});`;
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: dir, stdio: 'inherit' });
  return dataDir;
}

const checkouts = [
  { name: 'this checkout', dir: REPO_ROOT },
  { name: `base (${path.relative(REPO_ROOT, BASE_DIR) || BASE_DIR})`, dir: BASE_DIR },
];
const dataDirs = checkouts.map(({ dir }) => {
  buildServer(dir);
  return seededDataDir(dir);
});
const paths = requestPaths('/api/v1/config', OKM_COUNT);
const load = pathsLoad(paths, Number(options.connections), Number(options.duration));

const bare = await startBare();
const servers = await Promise.all(checkouts.map(({ dir }, index) => startKeyfleet({ DATA_DIR: dataDirs[index]! }, { built: true, dir })));
try {
  const targets = [
    { name: 'bare node:http', port: bare.port, child: bare.child },
    ...checkouts.map(({ name }, index) => ({ name: `keyfleet sqlite, ${name}`, port: servers[index]!.port, child: servers[index]!.child })),
  ];
  // One warm-up each, then the rounds: each target measured once a round, the order rotating.
  for (const target of targets) await measure(target.name, target.port, load, { warmUpSeconds: 0, server: target.child });
  const rounds: Figures[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
    const figures = new Map<string, Figures>();
    for (const target of order) figures.set(target.name, await measure(target.name, target.port, load, { warmUpSeconds: 0, server: target.child }));
    rounds.push(targets.map((target) => figures.get(target.name)!));
    const [bareFigures, ...keyfleet] = rounds.at(-1)!;
    console.log(
      `round ${round + 1}: ` +
        [bareFigures!, ...keyfleet]
          .map((entry) => `${entry.target} ${Math.round(entry.cpuMicrosPerRequest!)} µs${entry === bareFigures ? '' : ` (${(entry.cpuMicrosPerRequest! / bareFigures!.cpuMicrosPerRequest!).toFixed(2)} × bare, p99 ${entry.p99} ms)`}`)
          .join('; '),
    );
  }
  const cpuOf = (index: number) => rounds.map((figures) => figures[index]!.cpuMicrosPerRequest!);
  const ratioOf = (index: number) => rounds.map((figures) => figures[index]!.cpuMicrosPerRequest! / figures[0]!.cpuMicrosPerRequest!);
  console.log(`\nmedians over ${ROUNDS} rounds of ${options.duration} s, ${OKM_COUNT} OKMs, ${options.connections} connections:`);
  for (const [index, target] of targets.entries()) {
    console.log(`  ${target.name}: ${Math.round(median(cpuOf(index)))} µs a poll` + (index === 0 ? '' : `, ${median(ratioOf(index)).toFixed(2)} × bare`));
  }
  const differences = rounds.map((figures) => figures[1]!.cpuMicrosPerRequest! - figures[2]!.cpuMicrosPerRequest!);
  console.log(`  this checkout − base, per round: ${differences.map((value) => Math.round(value)).join(', ')} µs; median ${Math.round(median(differences))} µs`);
} finally {
  await Promise.all([stop(bare.child), ...servers.map(({ child }) => stop(child))]);
  for (const dataDir of dataDirs) fs.rmSync(dataDir, { recursive: true, force: true });
}
