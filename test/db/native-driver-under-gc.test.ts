import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runKeyfleet } from '../helpers/cli.ts';
import { serveProcess } from '../helpers/server-process.ts';

/**
 * A native driver whose objects are unsafe to finalize on this Node.js (better-sqlite3 12's
 * statements on Node 24: "Assertion failed: (env) != nullptr" in Statement::~Statement) aborts
 * the process at some garbage collection. This runs the server on SQLite, the checkpoint
 * worker with it, under a few seconds of mixed load with forced collections (test/helpers/forced-gc-preload.ts), then stops
 * it: every request is answered and the process exits 0, not by a signal.
 */
let dataDir: string;
let settings: Record<string, string>;

before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-gc-'));
  settings = { DATA_DIR: dataDir, RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_API_PER_MINUTE: '0', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0' };
  for (const args of [['customer', 'create', 'acme'], ['cert', 'create', '--customer', 'acme', '--name', 'acme-main']]) {
    const run = await runKeyfleet(settings, ...args);
    assert.equal(run.exitCode, 0, run.stderr);
  }
});
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function cliOutput(...args: string[]): Promise<string> {
  const run = await runKeyfleet(settings, ...args);
  assert.equal(run.exitCode, 0, run.stderr);
  return run.stdout.trim();
}

test('under mixed load with forced garbage collection, the SQLite server and its checkpoint worker run and stop without aborting', { timeout: 120_000 }, async () => {
  const token = await cliOutput('token', 'issue', '--customer', 'acme', '--scope', 'okm:read okm:write acl:read acl:create acl:delete');
  const { key: apiKey } = JSON.parse(await cliOutput('apikey', 'create', '--customer', 'acme', '--json')) as { key: string };
  const server = serveProcess(settings, { nodeArguments: ['--expose-gc', '--import', './test/helpers/forced-gc-preload.ts'] });
  const base = await server.listening;
  const json = { 'content-type': 'application/json' };
  const api = { authorization: `Bearer ${token}` };

  let sequence = 0;
  // A server that stops answering fails the test rather than hang it.
  const call = (url: string, init: RequestInit = {}) => fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  const requests: Record<string, () => Promise<Response>> = {
    enrolling: () => call(`${base}/api/v1/config/GC-${sequence++}?installCode=12345678&kasFirmware=1.0.0`),
    polling: () => call(`${base}/api/v1/config/GC-${sequence % 50}?installCode=12345678&kasDateTime=${Date.now()}&cacheMode=1`),
    listing: () => call(`${base}/api/v1/okms?limit=20`, { headers: api }),
    summary: () => call(`${base}/api/v1/fleet/summary`, { headers: api }),
    acl: () =>
      call(`${base}/api/v1/acls`, {
        method: 'POST',
        headers: { ...api, ...json },
        body: JSON.stringify({
          customer: 'acme',
          users: [{ user_id: sequence++ % 1000, pin_hash: 'pinhash', auth_time: 8, sounder: false, sounder_delay: 10, sounder_duration: 30, sounder_volume: 2, permissions: [1] }],
          locks: ['GC-LOCK'],
          user_data: { sequence },
        }),
      }),
    dlock: () =>
      call(`${base}/v1/dlock`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, ...json },
        body: JSON.stringify({ serial_no: `GC-LOCK-${sequence++}`, type: 'padlock', certificate: 'acme-main', enrolment_code: '00112233445566778899aabbccddeeff', base64: false }),
      }),
  };
  const kinds = Object.keys(requests);
  const answered: Record<string, Record<number, number>> = Object.fromEntries(kinds.map((kind) => [kind, {}]));
  const failures: string[] = [];
  const until = Date.now() + 4_000;
  const client = async (worker: number) => {
    for (let round = worker; Date.now() < until && failures.length === 0; round++) {
      const kind = kinds[round % kinds.length]!;
      try {
        const response = await requests[kind]!();
        await response.arrayBuffer();
        answered[kind]![response.status] = (answered[kind]![response.status] ?? 0) + 1;
      } catch (error) {
        failures.push(`${kind}: ${String(error)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 12 }, (_, worker) => client(worker)));
  const exit = await server.stop();

  assert.deepEqual(failures, [], server.output());
  assert.equal(exit, 0, `the server ended with ${exit}:\n${server.output()}`);
  assert.doesNotMatch(server.output(), /Assertion failed|FATAL ERROR|Segmentation/);
  const unexpected = Object.entries(answered).filter(([, statuses]) => Object.keys(statuses).some((status) => Number(status) >= 500));
  assert.deepEqual(unexpected, [], JSON.stringify(answered));
  for (const kind of kinds) assert.ok(Object.values(answered[kind]!).reduce((sum, count) => sum + count, 0) > 5, `few ${kind} requests: ${JSON.stringify(answered)}`);
});
