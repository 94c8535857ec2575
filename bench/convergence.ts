/**
 * Convergence benchmark (issue 14): how long a fleet of virtual OKMs takes to be in step
 * again after an operator change, on SQLite and PostgreSQL (when reachable). `keyfleet serve`
 * runs in one process, `keyfleet simulate` in another; this process makes the changes and
 * watches the database.
 *
 *   npm run bench:convergence -- [--sqlite] [--postgres] [--okms 100000]
 *                                [--polls-per-second 2000] [--concurrency 100]
 *                                [--firmware-bytes 4096] [--timeout 900]
 *
 * Devices and the server both count the default 150 s interval; the simulator's --speed is
 * chosen so that the fleet asks for --polls-per-second (speed = rate × 150 / okms). Steps:
 * 1. the fleet enrols and converges (204, then clock, cache mode, audit URL corrections);
 * 2. a new latest KAS firmware, an uploaded file of --firmware-bytes: every OKM downloads it,
 *    checks its SHA-256 and reports the version;
 * 3. a new polling interval (150 → 120 s) on every OKM: a PATCH of each through the admin API.
 * The changes go through the API with an admin token, as an operator makes them (a second
 * SQLite writer in this process would contend with the server's); the database is only read.
 * A change is converged when every OKM has polled since the change committed and was
 * answered {} (last_correction null): the server's view, not the simulator's. Times are
 * given in real seconds and in the devices' own time (× speed), which is what a real fleet
 * at that interval would take; the simulator's own per-device p50/p99 (from the first
 * correction a device sees to its next {}) come from its --json summary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import type { Db } from '../src/db/database.ts';
import type { Summary } from '../src/simulator/stats.ts';
import { cpuSecondsOf, forEachBenchDatabase, keyfleetCli, REPO_ROOT, startBare, startKeyfleet, stop, withDb, type BenchDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    okms: { type: 'string', default: '100000' },
    'polls-per-second': { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '100' },
    'firmware-bytes': { type: 'string', default: '4096' },
    timeout: { type: 'string', default: '900' },
  },
});
const OKM_COUNT = Number(options.okms);
const INTERVAL_S = 150;
const NEW_INTERVAL_S = 120;
const SPEED = (Number(options['polls-per-second']) * INTERVAL_S) / OKM_COUNT;
const TIMEOUT_MS = Number(options.timeout) * 1000;
const OPERATOR_CONNECTIONS = 10;
const WATCH_EVERY_MS = 500;
const CEILING_S = 15;

const load = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

interface Phase {
  name: string;
  realSeconds: number;
  deviceSeconds: number;
}

interface Result {
  database: string;
  phases: Phase[];
  summary: Summary;
  loadBefore: string;
  loadAfter: string;
}

const count = async (db: Db, where: (query: ReturnType<typeof okms>) => ReturnType<typeof okms>) =>
  Number((await where(okms(db)).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
const okms = (db: Db) => db.selectFrom('okms').innerJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number');

/** Waits until `inStep` counts the whole fleet; the real seconds since `since`. */
async function converged(name: string, simulator: ChildProcess, since: number, inStep: () => Promise<number>): Promise<Phase> {
  let last = -1;
  for (;;) {
    if (simulator.exitCode !== null || simulator.signalCode !== null) throw new Error(`${name}: the simulator exited (${simulator.exitCode ?? simulator.signalCode})`);
    const now = Date.now();
    const done = await inStep();
    if (done === OKM_COUNT) {
      const realSeconds = (Date.now() - since) / 1000;
      console.log(`  ${name}: all ${OKM_COUNT} in step after ${realSeconds.toFixed(1)} s (device time ${Math.round(realSeconds * SPEED)} s; load ${load()})`);
      return { name, realSeconds, deviceSeconds: realSeconds * SPEED };
    }
    if (now - since > TIMEOUT_MS) throw new Error(`${name}: ${done} of ${OKM_COUNT} in step after ${TIMEOUT_MS / 1000} s`);
    if (Math.floor((now - since) / 10_000) !== last) {
      last = Math.floor((now - since) / 10_000);
      console.log(`  ${name}: ${done} of ${OKM_COUNT} in step after ${((now - since) / 1000).toFixed(0)} s (load ${load()})`);
    }
    await new Promise((resolve) => setTimeout(resolve, WATCH_EVERY_MS));
  }
}

/** Every OKM polled since `since` and was answered {}. */
const inStepSince = (db: Db, since: number) => () => count(db, (query) => query.where('okm_polls.last_sync_time', '>', since).where('okms.last_correction', 'is', null));

/** An operator's API calls, as `Authorization: Bearer` an admin token. */
function operatorApi(port: number, token: string) {
  const http = new Pool(`http://127.0.0.1:${port}`, { connections: OPERATOR_CONNECTIONS });
  const call = async (method: 'PUT' | 'PATCH', path: string, contentType: string, body: string | Buffer) => {
    const response = await http.request({ method, path, headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body });
    const text = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
  };
  return {
    uploadLatest: async (kind: string, version: string, file: Buffer) => {
      await call('PUT', `/api/v1/firmware/${kind}/${version}`, 'application/octet-stream', file);
      await call('PUT', `/api/v1/firmware/${kind}/latest`, 'application/json', JSON.stringify({ version }));
    },
    /** PATCH of every OKM, OPERATOR_CONNECTIONS at a time: what an operator's script would do. */
    setPollingInterval: async (serials: string[], seconds: number) => {
      let next = 0;
      const worker = async () => {
        while (next < serials.length) await call('PATCH', `/api/v1/okms/${serials[next++]}`, 'application/json', JSON.stringify({ polling_interval: seconds }));
      };
      await Promise.all(Array.from({ length: OPERATOR_CONNECTIONS }, worker));
    },
    close: () => http.close(),
  };
}

function startSimulator(port: number, speed: number, extra: string[] = []): { child: ChildProcess; summary: Promise<Summary> } {
  const child = spawn(
    process.execPath,
    [
      ...['--import', 'tsx', 'src/cli/main.ts', 'simulate', '--url', `http://127.0.0.1:${port}`, '--okms', String(OKM_COUNT)],
      ...['--interval', String(INTERVAL_S), '--speed', speed.toFixed(3), '--concurrency', options.concurrency, '--json', ...extra],
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const summary = new Promise<Summary>((resolve, reject) =>
    child.once('exit', (code, signal) => (stdout.trim() ? resolve(JSON.parse(stdout) as Summary) : reject(new Error(`simulator exited (${code ?? signal}) without a summary`)))),
  );
  // Awaited at the end; a simulator that dies earlier fails the wait for convergence instead.
  summary.catch(() => {});
  return { child, summary };
}

async function benchDatabase({ name, env }: BenchDatabase): Promise<Result> {
  const loadBefore = load();
  // A shared, loaded host can take more than the default 30 s to start tsx and the server.
  const server = await startKeyfleet({ ...env, FLEET_POLLING_INTERVAL: String(INTERVAL_S) }, { startTimeoutMs: 180_000 });
  const simulator = startSimulator(server.port, SPEED);
  try {
    return await withDb(env, async (db) => {
      const phases: Phase[] = [];
      const started = Date.now();
      console.log(`${name}: ${OKM_COUNT} virtual OKMs at speed ${SPEED.toFixed(2)} (load ${load()})`);
      phases.push(await converged('enrolled and in step', simulator.child, started, () => count(db, (query) => query.where('okms.last_correction', 'is', null).whereRef('okm_polls.last_sync_time', '>', 'okms.created_at'))));

      const { token } = (await keyfleetCli(env, 'token', 'issue', '--scope', 'admin', '--ttl', '2h')) as { token: string };
      const api = operatorApi(server.port, token);
      try {
        await api.uploadLatest('kas', '2.0.0', Buffer.alloc(Number(options['firmware-bytes']), 'firmware 2.0.0'));
        const firmwareChanged = Date.now();
        phases.push(await converged('new latest firmware', simulator.child, firmwareChanged, inStepSince(db, firmwareChanged)));

        const writing = Date.now();
        const serials = (await okms(db).select('serial_number').execute()).map((row) => row.serial_number);
        await api.setPollingInterval(serials, NEW_INTERVAL_S);
        const intervalChanged = Date.now();
        console.log(`  new polling interval written to ${serials.length} OKMs in ${((intervalChanged - writing) / 1000).toFixed(1)} s`);
        phases.push(await converged('new polling interval', simulator.child, intervalChanged, inStepSince(db, intervalChanged)));
      } finally {
        await api.close();
      }
      simulator.child.kill('SIGINT');
      return { database: name, phases, summary: await simulator.summary, loadBefore, loadAfter: load() };
    });
  } finally {
    if (simulator.child.exitCode === null) simulator.child.kill('SIGKILL');
    await stop(server.child);
  }
}

/**
 * What one simulator process drives when nothing else limits it: against a bare node:http
 * server that answers every request with a bootstrap reply (each poll is then one request
 * and one tiny correction), asked for far more polls than it can make.
 */
async function simulatorCeiling(): Promise<{ pollsPerSecond: number; cpuPercent: number; lagP99: number | null; load: string }> {
  const bare = await startBare(JSON.stringify({ configUrl: '/api/v1/config' }));
  try {
    const simulator = startSimulator(bare.port, (1_000_000 * INTERVAL_S) / OKM_COUNT, ['--duration', `${CEILING_S}s`]);
    // CPU over the run's last seconds (after tsx has compiled and the fleet is built).
    await new Promise((resolve) => setTimeout(resolve, (CEILING_S / 3) * 1000));
    const first = { at: Date.now(), cpu: cpuSecondsOf(simulator.child.pid!) };
    await new Promise((resolve) => setTimeout(resolve, (CEILING_S / 3) * 1000));
    const cpuPercent = (100 * (cpuSecondsOf(simulator.child.pid!) - first.cpu)) / ((Date.now() - first.at) / 1000);
    const summary = await simulator.summary;
    return { pollsPerSecond: summary.polls_per_second, cpuPercent, lagP99: summary.poll_lag_ms.p99, load: load() };
  } finally {
    await stop(bare.child);
  }
}

const ceiling = await simulatorCeiling();
console.log(`simulator alone (bare server, ${CEILING_S} s): ${ceiling.pollsPerSecond} polls/s at ${Math.round(ceiling.cpuPercent)}% of a core, poll lag p99 ${ceiling.lagP99} ms, load ${ceiling.load}`);

const results: Result[] = [];
await forEachBenchDatabase(options, async (database) => {
  results.push(await benchDatabase(database));
});

console.log(`\n${OKM_COUNT} OKMs, interval ${INTERVAL_S} s (then ${NEW_INTERVAL_S} s), speed ${SPEED.toFixed(2)}, ${os.cpus().length} CPUs`);
console.table(
  results.flatMap(({ database, phases }) =>
    phases.map((phase) => ({
      database,
      phase: phase.name,
      'real s': Number(phase.realSeconds.toFixed(1)),
      'device s': Math.round(phase.deviceSeconds),
      intervals: Number((phase.deviceSeconds / INTERVAL_S).toFixed(2)),
    })),
  ),
);
console.table(
  results.map(({ database, summary, loadBefore, loadAfter }) => ({
    database,
    'polls/s': summary.polls_per_second,
    'after change p50 device s': summary.convergence.after_change.p50_simulated_s,
    'after change p99 device s': summary.convergence.after_change.p99_simulated_s,
    'poll lag p99 ms': summary.poll_lag_ms.p99,
    errors: JSON.stringify(summary.errors),
    load: `${loadBefore} → ${loadAfter}`,
  })),
);
console.log(`simulator alone: ${ceiling.pollsPerSecond} polls/s at ${Math.round(ceiling.cpuPercent)}% of a core (load ${ceiling.load})`);
