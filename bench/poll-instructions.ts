/**
 * Instructions per steady poll, counted by valgrind's callgrind rather than timed: on this
 * shared host CPU time moves ±10 µs a poll from round to round (bench:poll-ab), which hides a
 * change of 1-2 %; the count of the same code moved up to 1.4 % between runs (0.2 % for
 * another), so a change is compared in one run, and in more than one. A count is not a time
 * (a cache miss costs more than an add): it says whether a change removed work at all.
 *
 *   npx tsx bench/poll-instructions.ts [--postgres] [--base DIR] [--floor] [--okms 100000] [--warm-up 4000] [--polls 2000] [--windows 3] [--connections 1] [--keep-dumps DIR]
 *
 * `--floor` counts the floor server of bench/poll-floor.ts the same way after the checkouts,
 * on a fleet of its own, and prints this checkout over it: the part of keyfleet's multiple of
 * the floor that is the event loop's own instructions, without the host's noise (the kernel's
 * work, the socket writes' above all, is in neither count, and is much the same for both).
 *
 * Each checkout (this one, and `--base`, another worktree with its node_modules, as for
 * bench:poll-ab) serves its own seeded fleet (SQLite, or with `--postgres` a fresh PostgreSQL
 * schema) under `valgrind --tool=callgrind`, with
 * the bench's settings (startKeyfleet). A load generator outside valgrind sends `--warm-up`
 * polls; then, `--windows` times, the counters are zeroed, `--polls` more are sent, and the
 * counters dumped, and the window that counted least gives the figures. With 100 connections
 * and 20 000 warm-up polls on SQLite, the three windows of one run counted 403 k, 503 k and
 * 265 k a poll: until V8's first collection of the old generation, much of the poll ran in
 * code that had been deoptimised, or paid the incremental marking's write barrier. V8
 * runs `--single-threaded`: its compilers and garbage collector then work on the event loop's
 * thread, whose count is the figure; the SQLite checkpoint worker's is printed beside it.
 * PostgreSQL's own processes are not counted: the figure is keyfleet's side of a poll.
 * Work on timers is counted per second, not per poll, and valgrind slows every second 50-fold:
 * the passes that do much at once are off, and what the event loop does in as long without
 * polls is subtracted. That idle count is the lower of two 5 s windows, scaled to the polls'
 * duration (about 100 s): a one-off in it (V8 collecting once the load stopped) is counted
 * ten times over, so the figure not less the idle rate is printed beside it.
 *
 * `--keep-dumps DIR` moves each server's callgrind dumps to DIR/1, DIR/2, … (in the order the
 * servers are counted) instead of deleting them, so that two can be compared by function
 * (`callgrind_annotate`); the event loop's dump of window N is `callgrind.out.PID.(N+2)-01`.
 *
 * One connection by default: each poll is then a batch of its own, every run alike. With more,
 * how many polls share a transaction depends on timing, and the count moves with it.
 *
 * On PostgreSQL the same code spread 8 % over runs of 6 000 polls (keyfleet's side at a poll a
 * batch, 1.27-1.38 M), the runs whose polls took longer counting more: only a larger change
 * shows there, and both orders of a pair should agree.
 *
 * Compare checkouts in one run on a quiet host. Beside the test suite the same code counted
 * 0.92-0.95 M a poll against 0.55 M alone, most likely because the checkpoint worker fell
 * behind and each read then searched a longer WAL.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { floorServerArguments, floorServerEnv } from './floor-server.ts';
import { requestPaths } from './fleet.ts';
import { REPO_ROOT, buildServer, freePort, seedCheckout, sentAfter, stop, waitUntilServing, withFreshDatabase, type BenchDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    base: { type: 'string' },
    postgres: { type: 'boolean', default: false },
    okms: { type: 'string', default: '100000' },
    'warm-up': { type: 'string', default: '4000' },
    polls: { type: 'string', default: '2000' },
    connections: { type: 'string', default: '1' },
    windows: { type: 'string', default: '3' },
    floor: { type: 'boolean', default: false },
    'keep-dumps': { type: 'string' },
  },
});
const OKM_COUNT = Number(options.okms);
const WARM_UP = Number(options['warm-up']);
const POLLS = Number(options.polls);
const CONNECTIONS = Number(options.connections);
const WINDOWS = Number(options.windows);
const CONFIG_PATH = '/api/v1/config';
/** How long the event loop's work without polls is counted, per checkout. */
const IDLE_MS = 10_000;

/** What is counted: node's arguments after its own, and the environment the server needs besides the bench's. */
interface CountedServer {
  name: string;
  dir: string;
  arguments(database: BenchDatabase): string[];
  env(database: BenchDatabase): Record<string, string>;
}

const keyfleetIn = (name: string, dir: string): CountedServer => ({ name, dir, arguments: () => ['dist/src/cli/main.js', 'serve'], env: (database) => database.env });
const servers: CountedServer[] = [
  keyfleetIn('this checkout', REPO_ROOT),
  ...(options.base ? [keyfleetIn(`base (${options.base})`, path.resolve(options.base))] : []),
  ...(options.floor ? [{ name: 'the floor', dir: REPO_ROOT, arguments: floorServerArguments, env: (database: BenchDatabase) => floorServerEnv(database, REPO_ROOT) }] : []),
];

/**
 * Sends `paths`, made at `madeAt`, over `CONNECTIONS` keep-alive connections, each waiting for
 * its answer before its next, each with its device's clock as it is when sent (sentAfter): a
 * run under valgrind lasts far longer than the 5 minutes after which keyfleet corrects a clock.
 * Fails on any answer but 200; returns the share answered `{}` (the fleet's 88 % in step,
 * bench/fleet.ts MIX, and the polls whose firmware offer the retry policy holds back: about 91 %
 * on SQLite), which each window prints so that a count of other answers shows.
 */
async function send(port: number, paths: readonly string[], madeAt: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let next = 0;
  let inStep = 0;
  const get = (requestPath: string) =>
    new Promise<void>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: requestPath, agent }, (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => {
            if (body === '{}') inStep++;
            if (response.statusCode === 200) resolve();
            else reject(new Error(`${requestPath}: ${response.statusCode}`));
          });
        })
        .on('error', reject);
    });
  const connection = async () => {
    while (next < paths.length) await get(sentAfter(paths[next++]!, Date.now() - madeAt));
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  agent.destroy();
  return inStep / paths.length;
}

/** Instructions of each thread in the callgrind dump `dump` (1, 2, …) of `pid` in `directory`; thread 1 is the event loop. */
function instructionsByThread(directory: string, pid: number, dump: number): Map<number, number> {
  const byThread = new Map<number, number>();
  for (const file of fs.readdirSync(directory)) {
    // callgrind.out.PID.DUMP-THREAD, written by `callgrind_control --dump`.
    const match = new RegExp(`^callgrind\\.out\\.${pid}\\.${dump}-(\\d+)$`).exec(file);
    if (!match) continue;
    const summary = /^summary:\s+(\d+)/m.exec(fs.readFileSync(path.join(directory, file), 'utf8'));
    if (summary) byThread.set(Number(match[1]), Number(summary[1]));
  }
  if (!byThread.has(1)) throw new Error(`no dump ${dump} of the event loop's thread in ${directory}: ${fs.readdirSync(directory).join(', ')}`);
  return byThread;
}

/** V8's garbage collector, by the C++ names callgrind gives its functions. */
const GARBAGE_COLLECTOR = /^(v8::internal::|cppgc::).*(Heap|Scaveng|Mark|Sweep|GCTracer|Evacuat|RememberedSet|SlotSet|Compactor|Marking)/;

/**
 * The runtime functions through which V8 compiles a function or moves it to a faster tier; with
 * `--single-threaded` each compiles on the event loop's thread, inside the call.
 */
const COMPILER_ENTRY = /^v8::internal::Runtime_(Optimize|Compile|InstallBaselineCode|BytecodeBudgetInterrupt)/;

interface CostLines {
  all: number;
  /** The self cost of the garbage collector's functions. */
  collector: number;
  /** The inclusive cost of the calls into V8's compilers (COMPILER_ENTRY). */
  compiler: number;
}

/**
 * The instructions in the callgrind dump `file`, summed over its cost lines, and those of V8's
 * garbage collector and compilers among them. A collection of the old generation costs
 * hundreds of millions at once, so whether one fell among the counted polls moves the total by
 * several percent. The compilers are still at work long after the warm-up: after 4 000 polls
 * they were 58 k instructions of keyfleet's 368 k a poll, after 20 000 still 28 k of 325 k (a
 * server that has run for minutes has long finished; `--trace-opt` then shows a few functions a
 * minute), while the floor's little code was compiled early. The count without either is the
 * steadier figure to compare servers by.
 */
function costLines(file: string): CostLines {
  const names = new Map<string, string>();
  const nameOf = (reference: string) => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(reference);
    if (!match) return reference;
    if (match[2] !== undefined) names.set(match[1]!, match[2]);
    return names.get(match[1]!) ?? '';
  };
  let inCollector = false;
  let callee = '';
  let callCost = false;
  const costs: CostLines = { all: 0, collector: 0, compiler: 0 };
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) inCollector = GARBAGE_COLLECTOR.test(nameOf(line.slice(3)));
    else if (line.startsWith('cfn=')) callee = nameOf(line.slice(4));
    // The cost line after calls= is the call's inclusive cost, not the function's own.
    else if (line.startsWith('calls=')) callCost = true;
    else if (/^[0-9+*-]/.test(line)) {
      const cost = Number(line.split(' ')[1] ?? 0);
      if (!callCost) {
        costs.all += cost;
        if (inCollector) costs.collector += cost;
      } else if (COMPILER_ENTRY.test(callee)) costs.compiler += cost;
      callCost = false;
    }
  }
  return costs;
}

const millions = (count: number) => (count / 1e6).toFixed(2);

interface Count {
  perPoll: number;
  /** From the cost lines, without the garbage collector's instructions (costLines). */
  withoutCollector: number;
  /** From the cost lines, without the garbage collector's nor the compilers' instructions (costLines): the figure to compare by. */
  steady: number;
  /**
   * Not less the idle rate: the idle count, scaled to the polls' duration, caught a
   * one-off (a collection once the load stopped, say) in some runs, 2 641 M where the other
   * checkout's run gave 154 M, and the subtraction then decided the comparison.
   */
  withIdle: number;
}

async function countOne(checkout: CountedServer, database: BenchDatabase): Promise<Count> {
  buildServer(checkout.dir);
  seedCheckout(checkout.dir, database, OKM_COUNT);
  const pathsMadeAt = Date.now();
  const paths = requestPaths(CONFIG_PATH, OKM_COUNT).slice(0, WARM_UP + WINDOWS * POLLS);
  if (paths.length < WARM_UP + WINDOWS * POLLS) throw new Error(`--okms ${OKM_COUNT} gives ${paths.length} polls, fewer than --warm-up + --windows × --polls`);
  const dumps = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-callgrind-'));
  const port = await freePort();
  const server = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', '--dump-instr=no', `--callgrind-out-file=${dumps}/callgrind.out.%p`, process.execPath, '--single-threaded', ...checkout.arguments(database)],
    {
      cwd: checkout.dir,
      env: {
        ...process.env,
        ...checkout.env(database),
        // The bench's settings (startKeyfleet): limits counted, never reached; the per-IP one off, all load being from one IP.
        RATE_LIMIT_DEVICE_PER_MINUTE: '1000000000',
        RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0',
        RATE_LIMIT_API_PER_MINUTE: '1000000000',
        // The passes that run on timers do much work at once, now and then: under valgrind a
        // poll lasts 50 times as long, and whether a pass fell among the counted polls would
        // decide the figure. They run in other processes in a deployment that wants them apart.
        FLEET_PASS_INTERVAL_MS: '0',
        ROLLOUT_SWEEP_INTERVAL_MS: '0',
        WEBHOOK_DISPATCH_IN_SERVER: 'false',
        PORT: String(port),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'ignore', 'ignore'],
    },
  );
  // valgrind names its command pipes after HOST, which the server's settings set: callgrind_control must see the same.
  const control = (command: string) => execFileSync('callgrind_control', [command, String(server.pid)], { env: { ...process.env, HOST: '127.0.0.1' }, stdio: 'ignore' });
  try {
    await waitUntilServing(`http://127.0.0.1:${port}${paths[0]}`, server, 600_000);
    // Not counted until it serves: uninstrumented, the start is quick enough for Fastify's plugin timeout (10 s).
    control('--instr=on');
    await send(port, paths.slice(0, WARM_UP), pathsMadeAt);
    // What the event loop does without polls (the audit trail's chaining, timers), per ms: the
    // lower of two windows, since a collection of the old generation in one (850 M instructions
    // at once, where a window without one counts 30-60 M) would be subtracted 10 times over.
    const idleWindows: { all: number; costs: CostLines }[] = [];
    for (const dump of [1, 2]) {
      control('--zero');
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 2));
      control('--dump');
      idleWindows.push({ all: instructionsByThread(dumps, server.pid!, dump).get(1)!, costs: costLines(path.join(dumps, `callgrind.out.${server.pid}.${dump}-01`)) });
    }
    const lowestIdlePerMs = (count: (window: { all: number; costs: CostLines }) => number) => Math.min(...idleWindows.map(count)) / (IDLE_MS / 2);
    const idlePerMs = lowestIdlePerMs((window) => window.all);
    const idleWithoutCollectorPerMs = lowestIdlePerMs(({ costs }) => costs.all - costs.collector);
    const idleSteadyPerMs = lowestIdlePerMs(({ costs }) => costs.all - costs.collector - costs.compiler);
    const windows: Count[] = [];
    for (let window = 0; window < WINDOWS; window++) {
      const dump = 3 + window;
      control('--zero');
      const started = performance.now();
      const inStep = await send(port, paths.slice(WARM_UP + window * POLLS, WARM_UP + (window + 1) * POLLS), pathsMadeAt);
      const pollingMs = performance.now() - started;
      control('--dump');
      const byThread = instructionsByThread(dumps, server.pid!, dump);
      const main = byThread.get(1)!;
      const counted = costLines(path.join(dumps, `callgrind.out.${server.pid}.${dump}-01`));
      const count: Count = {
        perPoll: (main - idlePerMs * pollingMs) / POLLS,
        withoutCollector: (counted.all - counted.collector - idleWithoutCollectorPerMs * pollingMs) / POLLS,
        steady: (counted.all - counted.collector - counted.compiler - idleSteadyPerMs * pollingMs) / POLLS,
        withIdle: main / POLLS,
      };
      windows.push(count);
      const others = [...byThread].filter(([thread, count]) => thread !== 1 && count > 0).map(([thread, count]) => `thread ${thread} ${millions(count)} M`);
      console.log(
        `${checkout.name}, window ${window + 1}: ${Math.round(count.perPoll)} instructions a poll on the event loop (${millions(main)} M over ${POLLS} polls in ${(pollingMs / 1000).toFixed(1)} s, ` +
          `less ${millions(idlePerMs * pollingMs)} M that it spends idle in as long); ${Math.round(count.withoutCollector)} without the garbage collector's ` +
          `(${millions(counted.collector)} M over the polls; both from the dump's cost lines); ${Math.round(count.steady)} without the collector's nor the compilers' ` +
          `(${millions(counted.compiler)} M); ${Math.round(count.withIdle)} not less the idle rate; ` +
          `other threads over those polls: ${others.join(', ') || 'none'}; answered {} to ${(inStep * 100).toFixed(1)} %`,
      );
    }
    // The window that counted least is the steady poll's: a window can catch V8 undoing its
    // optimised code (a collection of the old generation that clears the maps it was built on,
    // the first minute's counters starting afresh) and running the poll's functions unoptimised
    // until they are compiled again, which counted up to 1.9 times the steady figure.
    const steadiest = windows.reduce((lowest, count) => (count.steady < lowest.steady ? count : lowest));
    console.log(`${checkout.name}: the lowest of ${WINDOWS} windows, ${Math.round(steadiest.steady)} without the collector's nor the compilers'; the windows: ${windows.map((count) => Math.round(count.steady)).join(', ')}`);
    const { perPoll, withoutCollector, steady, withIdle } = steadiest;
    return { perPoll, withoutCollector, steady, withIdle };
  } finally {
    await stop(server);
    if (options['keep-dumps']) {
      fs.mkdirSync(options['keep-dumps'], { recursive: true });
      const kept = path.join(options['keep-dumps'], String(fs.readdirSync(options['keep-dumps']).length + 1));
      fs.cpSync(dumps, kept, { recursive: true });
      console.log(`${checkout.name}: callgrind dumps kept in ${kept}`);
    }
    fs.rmSync(dumps, { recursive: true, force: true });
  }
}

const DATABASE = options.postgres ? 'postgres' : 'sqlite';
console.log(`${options.postgres ? 'PostgreSQL (keyfleet\'s process only)' : 'SQLite'}, ${OKM_COUNT} OKMs, ${WARM_UP} polls to warm up, then ${POLLS} counted, ${CONNECTIONS} connections`);
const counts = new Map<CountedServer, Count>();
for (const server of servers) counts.set(server, await withFreshDatabase(DATABASE, (database) => countOne(server, database)));
const [ours, ...others] = [...counts];
for (const [other, count] of others) {
  const base = other.name === 'the floor' ? 'the floor' : 'base';
  const difference = (figure: keyof Count) =>
    `${Math.round(ours![1][figure] - count[figure])} (${(((ours![1][figure] - count[figure]) / count[figure]) * 100).toFixed(1)} %, ${(ours![1][figure] / count[figure]).toFixed(2)} ×)`;
  console.log(
    `this checkout − ${base}, instructions a poll: ${difference('perPoll')}; without the garbage collector's: ${difference('withoutCollector')}; ` +
      `without the collector's nor the compilers': ${difference('steady')}; ` +
      `not less the idle rate: ${difference('withIdle')}`,
  );
}
