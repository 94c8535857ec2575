import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, describe, test } from 'node:test';
import { createTestDatabase, unavailableReason } from '../helpers/databases.ts';
import { eventually } from '../helpers/eventually.ts';
import { primaryStoppedAfterItsWorkers } from '../helpers/log-lines.ts';
import { freePort } from '../helpers/server-process.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Whether any process of the group is still alive. */
function groupAlive(groupId: number): boolean {
  try {
    process.kill(-groupId, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a documented start command (these run the compiled JavaScript in dist/, which `npm ci`
 * builds) in its own process group on a fresh SQLite DATA_DIR and a free port, waits until it
 * serves, lets `stop` signal it, and reports how it ended. Whatever of the group outlives
 * the command is killed after the report, so that a failing run leaves no server behind.
 */
async function startAndStop(
  command: string,
  args: string[],
  stop: (server: { pid: number; port: number; output: () => string }) => void | Promise<void>,
  settings: Record<string, string> = {},
) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-start-'));
  const port = await freePort();
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, HOME: os.homedir(), DATA_DIR: dataDir, ...settings, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid!;
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, name) => resolve(code ?? name ?? 'unknown')));
  try {
    await eventually(() => fetch(`http://127.0.0.1:${port}/healthz`).then((response) => response.ok, () => false), 60_000, `${command} ${args.join(' ')} serving`);
    await stop({ pid, port, output: () => output });
    const exitCode = await exited;
    // The group empties once the server is gone; a server the command left running keeps it.
    const groupEmptied = await eventually(() => !groupAlive(pid), 3_000).then(() => true, () => false);
    const stillServing = await fetch(`http://127.0.0.1:${port}/healthz`).then(() => true, () => false);
    return { exitCode, groupEmptied, stillServing, output };
  } finally {
    if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

before(() => {
  assert.ok(fs.existsSync(path.join(PROJECT_ROOT, 'dist/src/cli/main.js')), 'dist/ is missing: run npm run build (npm ci does)');
});

const drained = (output: string) => /"msg":"shutting down"/.test(output) && /"msg":"stopped"/.test(output);

for (const [documented, command, args] of [
  ['npm start', 'npm', ['start']],
  ['node bin/keyfleet.js serve', process.execPath, ['bin/keyfleet.js', 'serve']],
] as const) {
  test(`when the process that \`${documented}\` starts gets SIGTERM, the server drains and exits 0, and no process is left`, async () => {
    const run = await startAndStop(command, [...args], ({ pid }) => {
      process.kill(pid, 'SIGTERM');
    });

    assert.equal(run.exitCode, 0, run.output);
    assert.ok(drained(run.output), run.output);
    assert.ok(run.groupEmptied, `a process outlived ${documented}:\n${run.output}`);
    assert.equal(run.stillServing, false);
  });
}

/** The final answer (not a 100 Continue) in what the socket received. */
const FINAL_ANSWER = /HTTP\/1\.1 (?!100 )\d{3} [^\r]*\r\n/;

/**
 * A request the server has begun to handle whose body has not arrived: the drain waits for it.
 * It asks for 100 Continue, which the server sends once it has read the headers, so that the
 * test knows the request is in before it signals (a request whose headers arrive after the
 * drain began is refused with 503 at once, and the drain does not wait).
 */
async function requestWaitingForItsBody(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('POST /api/v1/audit/OKM-DRAIN HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n');
  await eventually(() => received.startsWith('HTTP/1.1 100 '), 5_000, 'the server reading the headers');
  return {
    finish: () => socket.write('{}'),
    answered: () => eventually(() => FINAL_ANSWER.exec(received)?.[0], 5_000, 'an answer'),
  };
}

test('when every process of `npm start` gets SIGTERM (Ctrl-C in a terminal, a cgroup stop), the server, which gets it again from npm while it drains, drains once and exits 0', async () => {
  let answer = '';
  const run = await startAndStop('npm', ['start'], async ({ pid, port, output }) => {
    const request = await requestWaitingForItsBody(port);
    process.kill(-pid, 'SIGTERM');
    await eventually(() => /"msg":"shutting down"/.test(output()), 5_000, 'shutting down');
    // npm forwards the SIGTERM it got too: the server gets it once more, now or (here, for
    // certain) while its drain waits for the request.
    process.kill(-pid, 'SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    request.finish();
    answer = await request.answered();
  });

  assert.equal(run.exitCode, 0, run.output);
  assert.ok(drained(run.output), run.output);
  assert.equal((run.output.match(/"msg":"shutting down"/g) ?? []).length, 1, run.output);
  assert.ok(run.groupEmptied, run.output);
  // Handled (the audit route's own answer), not refused with the 503 of a request that came in after the drain began.
  assert.match(answer, /^HTTP\/1\.1 [24]\d\d /);
});

describe('npm start with SERVE_WORKERS=2 on PostgreSQL', async () => {
  const skip = await unavailableReason('postgres');
  const workersStopped = (output: string) => (output.match(/"code":0,"signal":null,"msg":"worker stopped"/g) ?? []).length;

  for (const [who, signal] of [
    ['the process that `npm start` starts', (pid: number) => process.kill(pid, 'SIGTERM')],
    ['every process of `npm start` (npm, the primary and its workers)', (pid: number) => process.kill(-pid, 'SIGTERM')],
  ] as const) {
    test(`when ${who} gets SIGTERM, both workers drain, the primary exits 0 after them, and no process is left`, { skip, timeout: 120_000 }, async () => {
      const database = await createTestDatabase('postgres');
      try {
        const run = await startAndStop(
          'npm',
          ['start'],
          async ({ pid, output }) => {
            await eventually(() => (output().match(/"msg":"worker listening"/g) ?? []).length === 2, 60_000, 'two workers listening');
            signal(pid);
          },
          { ...database.env, SERVE_WORKERS: '2' },
        );

        assert.equal(run.exitCode, 0, run.output);
        assert.equal(workersStopped(run.output), 2, run.output);
        assert.ok(primaryStoppedAfterItsWorkers(run.output), run.output);
        assert.ok(run.groupEmptied, run.output);
        assert.equal(run.stillServing, false);
      } finally {
        await database.drop();
      }
    });
  }
});
