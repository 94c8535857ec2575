/**
 * Refusers under the firmware retry policy (contract §15): how many polls a device that
 * never installs firmware takes to have every other setting in step (clock, cache mode, audit
 * URL), with the policy on (the default) and off (`{"offers":0}`, strict seed order). Counted
 * in polls and device time, not CPU: a small fleet, a few minutes on both databases.
 *
 *   npm run bench:refusers -- [--sqlite] [--postgres] [--okms 100] [--refusers 10]
 *                             [--poll-every-ms 500] [--max-polls 60]
 *
 * For each policy and each database (a fresh one each time): `keyfleet serve` in a child
 * process with that FIRMWARE_RETRY_POLICY and a latest KAS firmware file, then `--okms`
 * virtual OKMs (this process, the simulator's own code) at the default 150 s interval
 * compressed so that each polls every `--poll-every-ms`; `--refusers` % of them refuse firmware, and every device's
 * clock starts 10 minutes slow. A run ends once every refuser was answered {} between offers
 * (every setting but firmware in step), or after `--max-polls` polls a device. The
 * simulator's count is checked against the server's: each refuser's drift report
 * (`GET /api/v1/okms/{serial}/drift`) for its clock and cache mode, and its `stuck` record.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startSimulation } from '../src/simulator/fleet.ts';
import type { Summary } from '../src/simulator/stats.ts';
import { BENCH_OPTIONS, forEachBenchDatabase, keyfleetCli, startKeyfleet, stop, withDb, type BenchDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    okms: { type: 'string', default: '100' },
    refusers: { type: 'string', default: '10' },
    'poll-every-ms': { type: 'string', default: '500' },
    'max-polls': { type: 'string', default: '60' },
  },
});
const OKM_COUNT = Number(options.okms);
const REFUSERS_PERCENT = Number(options.refusers);
const INTERVAL_S = 150;
const SPEED = (INTERVAL_S * 1000) / Number(options['poll-every-ms']);
const MAX_POLLS = Number(options['max-polls']);
const WATCH_EVERY_MS = 100;
const POLICIES: { name: string; env: Record<string, string> }[] = [
  { name: 'retry on (default)', env: {} },
  { name: 'strict ({"offers":0})', env: { FIRMWARE_RETRY_POLICY: '{"offers":0}' } },
];

interface Run {
  database: string;
  policy: string;
  realSeconds: number;
  pollsPerDevice: number;
  summary: Summary;
  /** The server's view of the refusers at the end. */
  server: { refusers: number; clockInStep: number; cacheModeInStep: number; onlyFirmwareOut: number; stuckOnFirmware: number };
}

function api(port: number, token: string) {
  const http = new Pool(`http://127.0.0.1:${port}`, { connections: 4 });
  const call = async (method: 'GET' | 'PUT', path: string, contentType?: string, body?: string | Buffer): Promise<unknown> => {
    const response = await http.request({ method, path, headers: { authorization: `Bearer ${token}`, ...(contentType && { 'content-type': contentType }) }, body });
    const text = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  };
  return {
    uploadLatest: async (kind: string, version: string, file: Buffer) => {
      await call('PUT', `/api/v1/firmware/${kind}/${version}`, 'application/octet-stream', file);
      await call('PUT', `/api/v1/firmware/${kind}/latest`, 'application/json', JSON.stringify({ version }));
    },
    drift: async (serial: string) => {
      const { data } = (await call('GET', `/api/v1/okms/${serial}/drift`)) as { data: { resolvers: { name: string; in_step: boolean }[] } };
      return new Map(data.resolvers.map(({ name, in_step }) => [name, in_step]));
    },
    close: () => http.close(),
  };
}

async function run(database: BenchDatabase, policy: (typeof POLICIES)[number]): Promise<Run> {
  const env: Record<string, string> = { ...database.env, ...policy.env, FLEET_POLLING_INTERVAL: String(INTERVAL_S) };
  const server = await startKeyfleet(env, { startTimeoutMs: 180_000 });
  try {
    const { token } = (await keyfleetCli(env, 'token', 'issue', '--scope', 'admin', '--ttl', '2h')) as { token: string };
    const operator = api(server.port, token);
    try {
      await operator.uploadLatest('kas', '1.5.0', Buffer.alloc(4096, 'firmware 1.5.0'));
      const simulation = startSimulation({
        url: `http://127.0.0.1:${server.port}`,
        okms: OKM_COUNT,
        prefix: 'REFUSE-',
        intervalSeconds: INTERVAL_S,
        speed: SPEED,
        durationMs: undefined,
        refuseFirmwarePercent: REFUSERS_PERCENT,
        slowClockPercent: 100,
        offlinePercent: 0,
        interruptDownloadsPercent: 0,
        installCodeBase: undefined,
        concurrency: 20,
        auditEvery: 0,
        untilInStep: false,
      });
      const started = Date.now();
      const refusers = Math.round((OKM_COUNT * REFUSERS_PERCENT) / 100);
      for (;;) {
        const snapshot = simulation.snapshot();
        if (snapshot.in_step === OKM_COUNT - refusers && snapshot.refusing_firmware_otherwise_in_step === refusers) break;
        if (snapshot.polls >= MAX_POLLS * OKM_COUNT) break;
        await new Promise((resolve) => setTimeout(resolve, WATCH_EVERY_MS));
      }
      simulation.stop();
      const summary = await simulation.finished;
      const realSeconds = (Date.now() - started) / 1000;

      const refusing = await withDb(env, async (db) =>
        db.selectFrom('okms').select(['serial_number', 'stuck_resolver']).where('serial_number', 'like', 'REFUSE-%').where('firmware_version', '=', '1.0.0').execute(),
      );
      const seen = { refusers: refusing.length, clockInStep: 0, cacheModeInStep: 0, onlyFirmwareOut: 0, stuckOnFirmware: 0 };
      for (const okm of refusing) {
        const drift = await operator.drift(okm.serial_number);
        if (drift.get('kasDateTime')) seen.clockInStep++;
        if (drift.get('cacheMode')) seen.cacheModeInStep++;
        if ([...drift].every(([name, inStep]) => inStep === (name !== 'kasFirmware'))) seen.onlyFirmwareOut++;
        if (okm.stuck_resolver === 'kasFirmware') seen.stuckOnFirmware++;
      }
      const result = { database: database.name, policy: policy.name, realSeconds, pollsPerDevice: summary.polls / OKM_COUNT, summary, server: seen };
      console.log(`${database.name}, ${policy.name}: ${JSON.stringify({ ...result, summary: undefined })}`);
      console.log(`  simulator summary: ${JSON.stringify(summary)}`);
      return result;
    } finally {
      await operator.close();
    }
  } finally {
    await stop(server.child);
  }
}

const runs: Run[] = [];
for (const policy of POLICIES) {
  await forEachBenchDatabase(options, async (database) => {
    runs.push(await run(database, policy));
  });
}

console.log(
  `\n${OKM_COUNT} OKMs, ${REFUSERS_PERCENT}% refusing firmware, every clock 10 min slow, interval ${INTERVAL_S} s at speed ${SPEED} (a poll every ${options['poll-every-ms']} ms), ` +
    `at most ${MAX_POLLS} polls a device; ${os.cpus().length} CPUs, load ${os.loadavg().map((value) => value.toFixed(2)).join(' ')}`,
);
console.table(
  runs.map(({ database, policy, realSeconds, pollsPerDevice, summary, server }) => {
    const settled = summary.refusers.otherwise_in_step;
    return {
      database,
      policy,
      'real s': Number(realSeconds.toFixed(1)),
      'polls/device': Number(pollsPerDevice.toFixed(1)),
      refusers: summary.refusers.devices,
      'others in step': summary.refusing_firmware_otherwise_in_step,
      'polls p50': settled.p50_polls ?? '-',
      'polls p99': settled.p99_polls ?? '-',
      'polls max': settled.max_polls ?? '-',
      'device s p50': settled.p50_simulated_s ?? '-',
      'device s p99': settled.p99_simulated_s ?? '-',
      'other corrections': summary.refusers.corrections_applied,
      'offers refused': summary.firmware.refused,
      'server: clock / cache mode in step': `${server.clockInStep} / ${server.cacheModeInStep} of ${server.refusers}`,
      'server: only firmware out': server.onlyFirmwareOut,
      'server: stuck on kasFirmware': server.stuckOnFirmware,
    };
  }),
);
