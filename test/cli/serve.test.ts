import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Agent, request } from 'undici';
import { eventually } from '../helpers/eventually.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { serveProcess } from '../helpers/server-process.ts';

/** The server has stopped listening: the client stops too. */
const REFUSED = 'ECONNREFUSED';

forEachDatabase('keyfleet serve shutdown', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
  });
  after(() => store.close());

  test('on SIGTERM under load, every request the server accepted is answered, polls it answered are stored, and it exits 0 within 10 s', async (t) => {
    const server = serveProcess({ ...store.database.env, RATE_LIMIT_DEVICE_PER_MINUTE: '0' });
    const base = await server.listening;
    const agent = new Agent({ connections: 20, pipelining: 1 });
    const outcomes: { serial: string; status?: number; error?: string }[] = [];
    let sent = 0;
    const client = async (worker: number) => {
      for (let stopped = false; !stopped; ) {
        const serial = `SHUTDOWN-${worker}-${sent++}`;
        try {
          const response = await request(`${base}/api/v1/config/${serial}`, { dispatcher: agent });
          await response.body.dump();
          outcomes.push({ serial, status: response.statusCode });
        } catch (error) {
          const code = (error as { code?: string }).code ?? String(error);
          outcomes.push({ serial, error: code });
          stopped = code === REFUSED;
        }
      }
    };
    const clients = Array.from({ length: 20 }, (_, worker) => client(worker));
    // Fifty answers before the signal, however loaded the host is (a fixed wait was not enough).
    await eventually(() => outcomes.filter((outcome) => outcome.status !== undefined).length > 50, 30_000, 'fifty polls answered');

    const signalled = Date.now();
    server.kill('SIGTERM');
    const exitCode = await server.exited;
    const exitedAfter = Date.now() - signalled;
    await Promise.race([Promise.all(clients), new Promise((resolve) => setTimeout(resolve, 5000))]);
    await agent.close();

    // A poll of a new serial is stored by the server iff it handled it: a failed request whose
    // serial is stored was handled and then left unanswered.
    const stored = new Set((await store.db.selectFrom('okms').select('serial_number').execute()).map((row) => row.serial_number));
    const answered = outcomes.filter((outcome) => outcome.status !== undefined);
    const failed = outcomes.filter((outcome) => outcome.error !== undefined);
    assert.equal(exitCode, 0, server.output());
    assert.ok(exitedAfter < 10_000, `exited after ${exitedAfter} ms`);
    assert.ok(answered.length > 50, `only ${answered.length} polls answered before the signal`);
    assert.deepEqual(answered.filter((outcome) => outcome.status !== 204 && outcome.status !== 503), []);
    assert.deepEqual(answered.filter((outcome) => outcome.status === 204 && !stored.has(outcome.serial)), []);
    assert.deepEqual(failed.filter((outcome) => stored.has(outcome.serial)), [], 'handled but not answered');
    t.diagnostic(`answered ${answered.length}, failed before reaching the server ${failed.length}: ${[...new Set(failed.map((outcome) => outcome.error))].join(', ')}`);
  });
});
