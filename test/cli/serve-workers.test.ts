import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestDatabase, unavailableReason, type TestDatabase } from '../helpers/databases.ts';
import { openTestStore, type TestStore } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { primaryStoppedAfterItsWorkers } from '../helpers/log-lines.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';
import { insertOkmsWithQueuedStatus, Receiver } from '../webhooks/helpers.ts';

const EVENT_COUNT = 600;

/** The pids of the workers the primary reported listening, in order. */
const listeningWorkers = (output: string) => [...output.matchAll(/"workerPid":(\d+),"port":\d+,"msg":"worker listening"/g)].map((match) => Number(match[1]));

describe('keyfleet serve --workers on SQLite', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase('sqlite');
  });
  after(() => database.drop());

  for (const [how, env, args] of [
    ['--workers 2', {}, ['--workers', '2']],
    ['SERVE_WORKERS=2', { SERVE_WORKERS: '2' }, []],
  ] as const) {
    test(`${how} is refused with a usage error naming PostgreSQL, before the database is made`, async () => {
      const run = await runKeyfleet({ ...database.env, ...env }, 'serve', ...args);

      assert.equal(run.exitCode, 2, run.stderr);
      assert.match(run.stderr, /several worker processes need PostgreSQL \(DATABASE_URL\); SQLite takes one writer at a time/);
      assert.deepEqual(fs.readdirSync(database.dataDir), []);
    });
  }
});

describe('keyfleet serve --workers, a malformed count', () => {
  for (const value of ['0', '65', 'two', '1.5']) {
    test(`--workers ${value} is a usage error`, async () => {
      const run = await runKeyfleet({ DATA_DIR: '/nonexistent/keyfleet' }, 'serve', '--workers', value);

      assert.equal(run.exitCode, 2, run.stderr);
      assert.match(run.stderr, /--workers: expected an integer 1–64/);
    });
  }

  test('SERVE_WORKERS=0 is refused at start, naming the variable', async () => {
    const run = await runKeyfleet({ DATA_DIR: '/nonexistent/keyfleet', SERVE_WORKERS: '0' }, 'serve');

    assert.equal(run.exitCode, 1, run.stderr);
    assert.match(run.stderr, /SERVE_WORKERS: expected 1–64, got 0/);
  });
});

describe('keyfleet serve --workers 2 on PostgreSQL', async () => {
  const skip = await unavailableReason('postgres');
  let store: TestStore;
  let receiver: Receiver;
  let server: ServerProcess;
  let base: string;
  before(async () => {
    if (skip) return;
    store = await openTestStore('postgres');
    receiver = await Receiver.start();
    server = serveProcess({ ...store.database.env, SERVE_WORKERS: '2', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_TIMEOUT_MS: '5000' });
    base = await server.listening;
    await eventually(() => listeningWorkers(server.output()).length === 2, 60_000, 'two workers listening');
  });
  after(async () => {
    if (skip) return;
    await server.stop();
    await receiver.close();
    await store.close();
  });

  test('both workers answer /readyz 200 on the one port', { skip }, async () => {
    const readiness = () => Promise.all(Array.from({ length: 8 }, () => fetch(`${base}/readyz`).then((response) => response.status)));

    // A worker just started on a loaded host may take longer than the probe's 2 s for its first query.
    const answers = await eventually(async () => {
      const statuses = await readiness();
      return statuses.every((status) => status === 200) && statuses;
    }, 30_000, 'every answer 200');

    assert.equal(answers.length, 8);
  });

  test('status events queued as polls leave them are each delivered exactly once while both workers dispatch', { skip, timeout: 120_000 }, async () => {
    receiver.reply = () => ({ status: 200, delayMs: 5 });
    const serials = Array.from({ length: EVENT_COUNT }, (_, index) => `WORKERS-${process.pid}-${index}`);

    await insertOkmsWithQueuedStatus(store.db, serials, (serial) => receiver.url(`/${serial}`));

    await eventually(() => new Set(receiver.received.map((entry) => entry.path)).size === EVENT_COUNT, 60_000, 'every event delivered');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(receiver.concurrentDuplicates, []);
    assert.equal(receiver.received.length, EVENT_COUNT, 'an event was delivered twice');
    const queued = await store.db.selectFrom('okm_polls').select('serial_number').where('status_queued_at', 'is not', null).where('serial_number', 'in', serials).execute();
    assert.deepEqual(queued, []);
  });

  test('a worker that dies is logged and restarted, and the port keeps answering', { skip, timeout: 120_000 }, async () => {
    const [victim] = listeningWorkers(server.output());

    process.kill(victim!, 'SIGKILL');

    await eventually(() => listeningWorkers(server.output()).length === 3, 60_000, 'a third worker listening');
    assert.match(server.output(), new RegExp(`"workerPid":${victim},"code":null,"signal":"SIGKILL","restartInMs":1000,"msg":"worker exited unexpectedly; restarting it"`));
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
  });

  test('on SIGTERM the primary forwards it, both workers drain, and it exits 0 after them', { skip }, async () => {
    const exitCode = await server.stop();

    const output = server.output();
    assert.equal(exitCode, 0, output);
    assert.equal((output.match(/"code":0,"signal":null,"msg":"worker stopped"/g) ?? []).length, 2, output);
    assert.ok(primaryStoppedAfterItsWorkers(output), output);
    await assert.rejects(fetch(`${base}/healthz`));
  });
});
