/**
 * What every benchmark needs: servers as child processes on 127.0.0.1 (so that the load
 * generator does not share their event loop), a bare node:http server to compare against,
 * throwaway SQLite and PostgreSQL databases, autocannon runs and the table of figures.
 * The fleet that the config-poll benchmarks load is in bench/fleet.ts.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import pg from 'pg';
import { loadSettings, type Settings } from '../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

export const REPO_ROOT = path.resolve(import.meta.dirname, '..');
export const POSTGRES_URL = process.env.KEYFLEET_BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const WARM_UP_S = 2;

/** The command-line options of every benchmark (for node:util parseArgs): which databases, and the load. */
export const BENCH_OPTIONS = {
  sqlite: { type: 'boolean', default: false },
  postgres: { type: 'boolean', default: false },
  duration: { type: 'string', default: '10' },
  connections: { type: 'string', default: '100' },
} as const;

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitUntilServing(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  // Requests autocannon left in flight finish first, so that shutdown does not race them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** A node script run as a child process with these environment variables added (a bare server, a webhook receiver). */
export function startScript(script: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['-e', script], { env: { ...process.env, ...env }, stdio: 'inherit' });
}

const BARE_SERVER = `
const body = process.env.BARE_BODY;
require('node:http')
  .createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      response.end(body);
    });
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

/** A node:http server that answers every request with `body`: the ceiling keyfleet is compared with. */
export async function startBare(body = '{}'): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = startScript(BARE_SERVER, { PORT: String(port), BARE_BODY: body });
  await waitUntilServing(`http://127.0.0.1:${port}/`, child);
  return { port, child };
}

export interface KeyfleetOptions {
  /** Write V8 CPU profiles of the process into this directory. */
  cpuProfileDir?: string | undefined;
  /** The keyfleet command and its arguments, given the free port chosen (also in PORT); default `serve`. */
  command?: (port: number) => string[];
  /** The path on that port that answers once the process is ready; default the bootstrap route. */
  readyPath?: string;
  /** How long the process may take to answer it; default 30 s. */
  startTimeoutMs?: number;
  /** Run the compiled server (dist/, as `npm start` does; buildServer() first) rather than the sources through tsx. */
  built?: boolean;
  /**
   * The checkout whose keyfleet runs (its working directory; default this one): another
   * worktree of the repository, to measure other code with this checkout's benchmark. Its own
   * node_modules must be installed, and with `built` its dist/ built (buildServer(dir)).
   */
  dir?: string;
  /** More arguments for node before the entry point (V8's tracing flags, say). */
  nodeArguments?: string[];
  /** A file descriptor for the process's standard output (its log lines, and what V8 traces); default none. */
  stdout?: number;
}

/** Compiles the server of the checkout `dir` into its dist/ (`npm run build`), for the processes started with `built`. */
export function buildServer(dir = REPO_ROOT): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: 'inherit' });
}

/**
 * `keyfleet serve` (or `options.command`) on a free port; resolves once it answers the
 * bootstrap route (or `options.readyPath`). The rate limits are set too high to trigger (all
 * load comes from one IP), so their cost is measured; `env` is added after them.
 */
export async function startKeyfleet(env: Record<string, string>, options: KeyfleetOptions = {}): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  // One profile per thread (tsx runs its loader in a worker); the main thread's is the largest.
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.cpuProfileDir)}`] : [];
  const command = options.command?.(port) ?? ['serve'];
  const child = spawn(process.execPath, [...profile, ...(options.nodeArguments ?? []), ...cliEntry(options), ...command], {
    cwd: options.dir ?? REPO_ROOT,
    env: {
      ...process.env,
      RATE_LIMIT_DEVICE_PER_MINUTE: '1000000000',
      RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0',
      RATE_LIMIT_API_PER_MINUTE: '1000000000',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    // The default log level, as `npm start` runs: its lines are written (to /dev/null), not silenced.
    stdio: ['ignore', options.stdout ?? 'ignore', 'inherit'],
  });
  try {
    await waitUntilServing(`http://127.0.0.1:${port}${options.readyPath ?? '/embeddedv1/kas/config'}`, child, options.startTimeoutMs ?? 120_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return { port, child };
}

/**
 * How long `keyfleet serve` (or `options.command`) takes from spawn to answering `/readyz`
 * 200 (migrations checked, key ring loaded, database answering): the process, still running.
 */
export async function startKeyfleetTimed(env: Record<string, string>, options: Omit<KeyfleetOptions, 'readyPath'> = {}) {
  const spawned = performance.now();
  const started = await startKeyfleet(env, { ...options, readyPath: '/readyz' });
  return { ...started, startMs: performance.now() - spawned };
}

/**
 * A process and its descendants (a primary and its workers), from /proc (Linux); not the
 * esbuild service of tsx, which a production process (compiled JavaScript) does not have.
 */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'esbuild') continue;
      const parent = Number(fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  const tree: number[] = [];
  for (const stack = [pid]; stack.length > 0; ) {
    const current = stack.pop()!;
    tree.push(current);
    stack.push(...(children.get(current) ?? []));
  }
  return tree;
}

/** Resident memory of a process and of its descendants. */
export function treeRssBytes(pid: number): number {
  return processTree(pid).reduce((sum, member) => {
    const rssKb = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${member}/status`, 'utf8'))?.[1];
    return sum + Number(rssKb ?? 0) * 1024;
  }, 0);
}

/** The node arguments that run keyfleet's command line: compiled, or the sources through tsx. */
function cliEntry({ built = false }: Pick<KeyfleetOptions, 'built'>): string[] {
  return built ? ['dist/src/cli/main.js'] : ['--import', 'tsx', 'src/cli/main.ts'];
}

/** `keyfleet ARGS --json` against the given settings; its JSON output. */
export function keyfleetCli(env: Record<string, string>, ...args: string[]): Promise<Record<string, unknown>> {
  return keyfleetCliOf({}, env, ...args);
}

/** keyfleetCli, run from the checkout `dir` (default this one), compiled when `built`: the command line of the server a benchmark runs with startKeyfleet's same options. */
export function keyfleetCliOf({ dir = REPO_ROOT, built }: Pick<KeyfleetOptions, 'dir' | 'built'>, env: Record<string, string>, ...args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...cliEntry({ built }), ...args, '--json'], { cwd: dir, env: { ...process.env, ...env, LOG_LEVEL: 'silent' } }, (error, stdout, stderr) =>
      error ? reject(new Error(`keyfleet ${args.join(' ')}: ${stderr.trim()}`)) : resolve(JSON.parse(stdout) as Record<string, unknown>),
    );
  });
}

// ---- databases ----

export interface BenchDatabase {
  name: 'sqlite' | 'postgres';
  env: Record<string, string>;
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function adminQuery<Row extends object = object>(sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * The transactions committed in the bench's database so far (pg_stat_database, every schema and
 * client: the idle servers' background checks too, a few a second). PostgreSQL publishes a
 * backend's counts about once a second, so a count over 10 s is right to a few per cent.
 */
async function postgresCommits(): Promise<number> {
  const [row] = await adminQuery<{ commits: string }>('SELECT xact_commit::text AS commits FROM pg_stat_database WHERE datname = current_database()');
  return Number(row!.commits);
}

/**
 * Seeds the fresh database `database` with `okmCount` OKMs of the checkout `dir`, by that
 * checkout's own bench/fleet.ts (its schema may differ from this one's).
 */
export function seedCheckout(dir: string, database: BenchDatabase, okmCount: number): void {
  const script = `const { seedFleet } = await import(${JSON.stringify(path.join(dir, 'bench/fleet.ts'))}); await seedFleet(${JSON.stringify(database.env)}, ${okmCount});`;
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: dir, stdio: 'inherit' });
}

/**
 * Runs `body` on a fresh database of that kind: a throwaway data directory, for PostgreSQL
 * also a fresh schema (which must be reachable); both removed afterwards.
 */
export async function withFreshDatabase<T>(name: BenchDatabase['name'], body: (database: BenchDatabase) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
  try {
    if (name === 'sqlite') return await body({ name, env: { DATA_DIR: dataDir } });
    const schema = `bench_${randomBytes(6).toString('hex')}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    await adminQuery(`CREATE SCHEMA ${schema}`);
    try {
      return await body({ name, env: { DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') } });
    } finally {
      await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Runs `body` on a throwaway SQLite data directory and then on a fresh PostgreSQL schema (or
 * only on the ones asked for). PostgreSQL is skipped with a line when unreachable, unless it
 * was asked for explicitly.
 */
export async function forEachBenchDatabase(selection: { sqlite: boolean; postgres: boolean }, body: (database: BenchDatabase) => Promise<void>): Promise<void> {
  const both = !selection.sqlite && !selection.postgres;
  if (selection.sqlite || both) await withFreshDatabase('sqlite', body);
  if (selection.postgres || both) {
    if (!(await postgresReachable())) {
      if (selection.postgres) throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL}`);
      console.log(`postgres: skipped, not reachable at ${POSTGRES_URL}`);
      return;
    }
    await withFreshDatabase('postgres', body);
  }
}

/** Opens and migrates the database of `env` (settings as keyfleet reads them), for a benchmark's own reads and writes. */
export async function withDb<T>(env: Record<string, string>, use: (db: Db, settings: Settings) => Promise<T>): Promise<T> {
  const settings = loadSettings({ ...env, LOG_LEVEL: 'silent' });
  const { db, dialect } = openDatabase(dialectFor(settings));
  try {
    await migrateToLatest(db, dialect);
    return await use(db, settings);
  } finally {
    await db.destroy();
  }
}

/** Bytes the database of `env` takes: the SQLite files (WAL included), or the PostgreSQL schema's tables and indexes. */
export async function databaseBytes(database: BenchDatabase): Promise<number> {
  if (database.name === 'sqlite') {
    const dir = database.env.DATA_DIR!;
    return fs.readdirSync(dir).filter((file) => file.startsWith('keyfleet.sqlite')).reduce((sum, file) => sum + fs.statSync(path.join(dir, file)).size, 0);
  }
  return withDb(database.env, async (db) => {
    const { rows } = await sql<{ bytes: string | null }>`
      select sum(pg_total_relation_size(c.oid)) as bytes from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind = 'r'`.execute(db);
    return Number(rows[0]?.bytes ?? 0);
  });
}

// ---- load ----

export interface Figures {
  target: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU time (user + system, all threads) the server process spent per request answered. */
  cpuMicrosPerRequest?: number;
  /** CPU time every PostgreSQL process of the host spent per request answered (other clients of the server included). */
  postgresCpuMicrosPerRequest?: number;
  /**
   * Requests answered per transaction committed in the bench's database meanwhile (see
   * postgresCommits): for polls, how many shared a batch's commit (a batch's round trips and
   * commit cost about the same for few polls or many).
   */
  requestsPerCommit?: number;
}

export interface Load {
  connections: number;
  seconds: number;
  /** Send this many requests in all rather than for `seconds` (each path once, say). */
  amount?: number;
  /** The next request to send: called once per request. */
  next: () => { method?: 'GET' | 'POST' | 'DELETE'; path: string; headers?: Record<string, string>; body?: string };
}

/** The clock a device reports in a bench fleet's request path (bench/fleet.ts requestPaths). */
const REPORTED_CLOCK = /([?&]kasDateTime=)(\d+)/;

/**
 * `requestPath` as its device sends it `elapsedMs` after the path was made: the clock it
 * reports moved on by as much. keyfleet corrects a clock more than 5 minutes off
 * (src/device/resolvers/date-time.ts): sent as made, a run longer than that (under valgrind, or
 * of many rounds) would find every device in step told to set its clock, and count those
 * corrections, each written to its OKM's row, as if they were steady polls.
 */
export function sentAfter(requestPath: string, elapsedMs: number): string {
  return requestPath.replace(REPORTED_CLOCK, (_match, name: string, time: string) => `${name}${Number(time) + elapsedMs}`);
}

/** GETs of `paths` (made just before), in turn, each with its device's clock as it is when sent (sentAfter). */
export function pathsLoad(paths: string[], connections: number, seconds: number): Load {
  const madeAt = Date.now();
  let next = 0;
  return { connections, seconds, next: () => ({ path: sentAfter(paths[next++ % paths.length]!, Date.now() - madeAt) }) };
}

function run(port: number, load: Load, seconds: number) {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: load.connections,
    ...(load.amount === undefined ? { duration: seconds } : { amount: load.amount }),
    requests: [{ setupRequest: (request) => ({ ...request, method: 'GET', ...load.next() }) }],
  });
}

/** USER_HZ: the unit of /proc's CPU times, 100 on every Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system) a process has used so far, from /proc (Linux); with
 * `reapedChildren`, plus those of its children that have exited and that it has waited for.
 */
function processCpuSeconds(pid: number, { reapedChildren = false } = {}): number {
  // Fields after the parenthesised command name; utime and stime are the 12th and 13th of them, cutime and cstime the next two.
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const children = reapedChildren ? Number(fields[13]) + Number(fields[14]) : 0;
  return (Number(fields[11]) + Number(fields[12]) + children) / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds a process and its descendants (a primary and its workers) have used so far. */
export function cpuSecondsOf(pid: number): number {
  return processTree(pid).reduce((sum, member) => sum + processCpuSeconds(member), 0);
}

/**
 * CPU seconds all processes named postgres on this host have used so far. A backend that
 * exits (a client closing its connection, ours or another's) takes its CPU time out of the
 * live processes' sum; the postmaster, which reaps it, then counts it among its children's,
 * so those are added: otherwise the figure can drop, and a run's difference be negative.
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += processCpuSeconds(Number(entry), { reapedChildren: true });
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

export interface MeasureOptions {
  warmUpSeconds?: number;
  /** The server's process: its CPU time per request is reported too. */
  server?: ChildProcess;
  /** Report the CPU time of the host's PostgreSQL processes per request too. */
  postgres?: boolean;
}

/** Figures of `load` after a warm-up run of the same load. */
export async function measure(target: string, port: number, load: Load, { warmUpSeconds = WARM_UP_S, server, postgres = false }: MeasureOptions = {}): Promise<Figures> {
  if (warmUpSeconds > 0) await run(port, load, warmUpSeconds);
  const cpuBefore = server?.pid === undefined ? undefined : cpuSecondsOf(server.pid);
  const postgresBefore = postgres ? postgresCpuSeconds() : undefined;
  const commitsBefore = postgres ? await postgresCommits() : undefined;
  const result = await run(port, load, load.seconds);
  const answered = result.requests.total;
  const commits = commitsBefore === undefined ? undefined : (await postgresCommits()) - commitsBefore;
  return {
    target,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    ...(cpuBefore !== undefined && answered > 0 && { cpuMicrosPerRequest: ((cpuSecondsOf(server!.pid!) - cpuBefore) * 1e6) / answered }),
    ...(postgresBefore !== undefined && answered > 0 && { postgresCpuMicrosPerRequest: ((postgresCpuSeconds() - postgresBefore) * 1e6) / answered }),
    ...(commits !== undefined && commits > 0 && { requestsPerCommit: answered / commits }),
  };
}

/**
 * The figures of one target measured in slices of `sliceSeconds` each (the same load, continued),
 * as one measurement: rates and CPU per request over all the requests answered, commits over
 * all the commits; p50 and p99 are the medians of the slices' (autocannon reports percentiles,
 * not the latencies to merge).
 */
export function combineSlices(slices: readonly Figures[], sliceSeconds: number): Figures {
  if (slices.length === 0) throw new Error('no slices to combine');
  const answered = slices.map((slice) => slice.requestsPerSecond * sliceSeconds);
  const requests = answered.reduce((sum, count) => sum + count, 0);
  /** The mean of a per-request figure over all the requests, when every slice has it. */
  const perRequest = (of: (slice: Figures) => number | undefined) => {
    const values = slices.map(of);
    if (values.some((value) => value === undefined) || requests === 0) return undefined;
    return values.reduce<number>((sum, value, index) => sum + value! * answered[index]!, 0) / requests;
  };
  const cpu = perRequest((slice) => slice.cpuMicrosPerRequest);
  const postgresCpu = perRequest((slice) => slice.postgresCpuMicrosPerRequest);
  const commits = slices.map((slice, index) => (slice.requestsPerCommit === undefined ? undefined : answered[index]! / slice.requestsPerCommit));
  return {
    target: slices[0]!.target,
    requestsPerSecond: requests / (sliceSeconds * slices.length),
    p50: median(slices.map((slice) => slice.p50)),
    p99: median(slices.map((slice) => slice.p99)),
    non2xx: slices.reduce((sum, slice) => sum + slice.non2xx, 0),
    errors: slices.reduce((sum, slice) => sum + slice.errors, 0),
    ...(cpu !== undefined && { cpuMicrosPerRequest: cpu }),
    ...(postgresCpu !== undefined && { postgresCpuMicrosPerRequest: postgresCpu }),
    ...(commits.every((count) => count !== undefined) && { requestsPerCommit: requests / commits.reduce<number>((sum, count) => sum + count!, 0) }),
  };
}

/** The median of `values` (not sorted in place): for an even count, the mean of the two middle values. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of an empty list');
  const sorted = [...values].sort((a, b) => a - b);
  const upper = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[upper]! : (sorted[upper - 1]! + sorted[upper]!) / 2;
}

/** The figures as a table, each rate also as a ratio to the bare server's figures named by `bareOf`. */
export function printFigures(figures: Figures[], bareOf: (entry: Figures) => Figures | undefined): void {
  console.table(
    figures.map((entry) => {
      const bare = bareOf(entry);
      return {
        target: entry.target,
        'req/s': Math.round(entry.requestsPerSecond),
        'p50 ms': entry.p50,
        'p99 ms': entry.p99,
        'ratio to bare': bare ? (entry.requestsPerSecond / bare.requestsPerSecond).toFixed(2) : '',
        'non-2xx': entry.non2xx,
        errors: entry.errors,
        ...(entry.cpuMicrosPerRequest !== undefined && { 'server CPU µs/req': Math.round(entry.cpuMicrosPerRequest) }),
        ...(entry.postgresCpuMicrosPerRequest !== undefined && { 'PostgreSQL CPU µs/req': Math.round(entry.postgresCpuMicrosPerRequest) }),
        // Hosts differ by 3× in what a request costs; CPU per request over the bare server's, in the same run, does not.
        ...(entry !== bare && entry.cpuMicrosPerRequest !== undefined && bare?.cpuMicrosPerRequest !== undefined && {
          'CPU × bare': ((entry.cpuMicrosPerRequest + (entry.postgresCpuMicrosPerRequest ?? 0)) / bare.cpuMicrosPerRequest).toFixed(2),
        }),
      };
    }),
  );
}
