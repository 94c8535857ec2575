/**
 * Where a steady poll's CPU goes, by thread of the server process: the event loop, SQLite's
 * checkpoint worker, V8's helpers. Seeds the bench fleet (bench/fleet.ts) on SQLite, runs
 * keyfleet compiled as `npm start` does, warms up, then sends a fixed number of polls and
 * reads each thread's CPU time from /proc/<pid>/task (Linux).
 *
 *   npm run bench:poll-threads -- [--okms 100000] [--polls 150000] [--connections 100] [--strace]
 *
 * --strace also counts the server's system calls per poll (strace -c -f): pwrite64 per poll
 * is the WAL and checkpoint pages, fsync per poll the checkpoints. strace slows the server
 * down several times, so its batches of polls are smaller than without it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { requestPaths, seedFleet } from './fleet.ts';
import { buildServer, cpuSecondsOf, startKeyfleet, stop } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    okms: { type: 'string', default: '100000' },
    polls: { type: 'string', default: '150000' },
    connections: { type: 'string', default: '100' },
    strace: { type: 'boolean', default: false },
  },
});
const OKM_COUNT = Number(options.okms);
const POLLS = Number(options.polls);
const WARM_UP_S = 3;
/** USER_HZ, the unit of /proc's CPU times. */
const TICKS_PER_SECOND = 100;

/** CPU ticks of each thread of `pid`, by "tid:name". */
function threadTicks(pid: number): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      ticks.set(`${tid}:${name}`, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return ticks;
}

buildServer();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-threads-'));
try {
  await seedFleet({ DATA_DIR: dataDir }, OKM_COUNT);
  const { port, child } = await startKeyfleet({ DATA_DIR: dataDir }, { built: true });
  try {
    const paths = requestPaths('/api/v1/config', OKM_COUNT);
    let next = 0;
    const load = (amountOrDuration: { amount: number } | { duration: number }) =>
      autocannon({
        url: `http://127.0.0.1:${port}`,
        connections: Number(options.connections),
        ...amountOrDuration,
        requests: [{ setupRequest: (request) => ({ ...request, method: 'GET', path: paths[next++ % paths.length]! }) }],
      });
    await load({ duration: WARM_UP_S });
    const straceOutput = path.join(dataDir, 'strace.txt');
    const strace = options.strace ? spawn('strace', ['-c', '-f', '-p', String(child.pid), '-o', straceOutput], { stdio: 'ignore' }) : undefined;
    if (strace) await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = threadTicks(child.pid!);
    const cpuBefore = cpuSecondsOf(child.pid!);
    const result = await load({ amount: POLLS });
    const cpu = cpuSecondsOf(child.pid!) - cpuBefore;
    const after = threadTicks(child.pid!);
    const answered = result.requests.total;
    const perPoll = (ticks: number) => ((ticks / TICKS_PER_SECOND) * 1e6) / answered;
    console.table(
      [...after]
        .map(([thread, ticks]) => ({ thread, 'CPU µs/poll': perPoll(ticks - (before.get(thread) ?? 0)) }))
        .filter((row) => row['CPU µs/poll'] >= 0.5)
        .map((row) => ({ ...row, 'CPU µs/poll': row['CPU µs/poll'].toFixed(1) })),
    );
    console.log(
      `${OKM_COUNT} OKMs: ${answered} polls, ${result.non2xx} non-2xx, ${Math.round(result.requests.average)} polls/s, p99 ${result.latency.p99} ms, ` +
        `server CPU ${((cpu * 1e6) / answered).toFixed(1)} µs/poll`,
    );
    if (strace) {
      strace.kill('SIGINT');
      await new Promise((resolve) => strace.on('exit', resolve));
      const calls = fs
        .readFileSync(straceOutput, 'utf8')
        .split('\n')
        .flatMap((line) => {
          const match = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
          return match ? [{ syscall: match[2]!, 'per poll': (Number(match[1]) / answered).toFixed(2) }] : [];
        });
      console.table(calls.slice(0, 12));
    }
  } finally {
    await stop(child);
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
