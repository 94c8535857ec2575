/**
 * What the benchmarks share: child-process servers (a bare node:http baseline and keyfleet),
 * fresh databases, and autocannon runs with their figures. Everything listens on 127.0.0.1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

export const POSTGRES_URL = process.env.KEYFLEET_BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const REPO_ROOT = path.resolve(import.meta.dirname, '..');

// ---- servers ----

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitUntilServing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer within 30 s`);
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  // Requests autocannon left in flight finish first, so that shutdown does not race them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const BARE_SERVER = `
require('node:http')
  .createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    response.end('{}');
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

/** A node:http server that answers {} to everything: the ceiling a Node.js server reaches on this machine. */
export function startBare(port: number): ChildProcess {
  return spawn(process.execPath, ['-e', BARE_SERVER], { env: { ...process.env, PORT: String(port) }, stdio: 'inherit' });
}

/** `keyfleet serve` on the port; with cpuProfileDir, V8 CPU profiles are written there. */
export function startKeyfleet(port: number, env: Record<string, string>, cpuProfileDir?: string): ChildProcess {
  // One profile per thread (tsx runs its loader in a worker); the main thread's is the largest.
  const profile = cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(cpuProfileDir)}`] : [];
  return spawn(process.execPath, [...profile, '--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
}

// ---- databases ----

export type DatabaseKind = 'sqlite' | 'postgres';

export async function postgresReachable(): Promise<boolean> {
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

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * The databases a run covers (--sqlite, --postgres, neither: both), each as the settings of a
 * fresh one (a temporary DATA_DIR; for PostgreSQL a schema dropped afterwards) given to
 * `run`. PostgreSQL is skipped when unreachable, unless it was asked for by name.
 */
export async function forEachBenchDatabase(
  selected: { sqlite: boolean; postgres: boolean },
  run: (kind: DatabaseKind, env: Record<string, string>) => Promise<void>,
): Promise<void> {
  const both = !selected.sqlite && !selected.postgres;
  if (selected.sqlite || both) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
    try {
      await run('sqlite', { DATA_DIR: dataDir });
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  if (!selected.postgres && !both) return;
  if (!(await postgresReachable())) {
    if (selected.postgres) throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL}`);
    console.log(`postgres: skipped, not reachable at ${POSTGRES_URL}`);
    return;
  }
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-bench-'));
  await adminQuery(`CREATE SCHEMA ${schema}`);
  try {
    await run('postgres', { DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') });
  } finally {
    await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

// ---- load ----

export interface LoadOptions {
  connections: number;
  durationS: number;
  warmUpS: number;
  headers?: Record<string, string>;
}

export interface Figures {
  target: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

function load(port: number, paths: string[], seconds: number, options: LoadOptions) {
  let next = 0;
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: options.connections,
    duration: seconds,
    ...(options.headers ? { headers: options.headers } : {}),
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: paths[next++ % paths.length]! }) }],
  });
}

/** GETs of the paths in turn, by `connections` clients: a warm-up, then the measured run. */
export async function measure(target: string, port: number, paths: string[], options: LoadOptions): Promise<Figures> {
  await load(port, paths, options.warmUpS, options);
  const result = await load(port, paths, options.durationS, options);
  return {
    target,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

/** The bare server's figures for the same paths, so that the load generator's own cost is the same. */
export async function measureBare(paths: string[], options: LoadOptions): Promise<Figures> {
  const port = await freePort();
  const bare = startBare(port);
  try {
    await waitUntilServing(`http://127.0.0.1:${port}/`, bare);
    return await measure('bare node:http', port, paths, options);
  } finally {
    await stop(bare);
  }
}

/** The figures as a table, each rate also as a share of the first (the bare server's). */
export function printFigures(figures: Figures[]): void {
  const bareRate = figures[0]!.requestsPerSecond;
  console.table(
    figures.map((entry) => ({
      target: entry.target,
      'req/s': Math.round(entry.requestsPerSecond),
      'p50 ms': entry.p50,
      'p99 ms': entry.p99,
      'ratio to bare': (entry.requestsPerSecond / bareRate).toFixed(2),
      'non-2xx': entry.non2xx,
      errors: entry.errors,
    })),
  );
}
