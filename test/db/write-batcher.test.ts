import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Db } from '../../src/db/database.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { createWriteBatcher, type WriteGrouping } from '../../src/db/write-batcher.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

/** A promise settled when `release` is called: whatever awaits it waits until then, however slow the host. */
function heldUntilReleased(): { held: Promise<void>; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  return { held, release };
}

const GROUPINGS: WriteGrouping[] = [{ kind: 'batch', maxSize: 64 }, { kind: 'batch', maxSize: 3 }, { kind: 'transaction' }];

forEachDatabase('write batcher', (kind) => {
  let t: TestApp;
  /** A second connection: sees only what has been committed. */
  let other: Db;
  const serials = Array.from({ length: 10 }, (_, index) => `BATCH-${index}`);
  before(async () => {
    t = await buildTestApp(kind);
    other = openDatabase(dialectFor(t.settings)).db;
    for (const serial of serials) await insertOkm(t.db, serial, null, UNCONFIGURED_OKM, 1000);
    // Each with a poll row, whose last IP the calls below write as a poll would.
    await t.db.insertInto('okm_polls').values(serials.map((serial) => ({ serial_number: serial, last_sync_time: 1000, last_ip: '', reported: '{}', install_code: null, status_queued_at: null }))).execute();
  });
  after(async () => {
    await other.destroy();
    await t.close();
  });

  const lastIp = async (db: Db, serial: string) =>
    (await db.selectFrom('okm_polls').select('last_ip').where('serial_number', '=', serial).executeTakeFirstOrThrow()).last_ip;

  /** Work for a batch that runs `call` for each of its calls in turn. */
  const eachInTurn =
    <In, Out>(call: (db: Db, input: In) => Promise<Out>) =>
    async (db: Db, inputs: readonly In[]) => {
      const outputs: Out[] = [];
      for (const input of inputs) outputs.push(await call(db, input));
      return outputs;
    };

  /** Writes `ip` on the OKM and answers with what the row then holds; fails for ip "bad". */
  const writeIp = (db: Db, { serial, ip }: { serial: string; ip: string }) => async () => {
    await db.updateTable('okm_polls').set({ last_ip: ip }).where('serial_number', '=', serial).execute();
    if (ip === 'bad') throw new Error('bad input');
    return { serial, ip: await lastIp(db, serial) };
  };

  for (const grouping of GROUPINGS) {
    const name = grouping.kind === 'batch' ? `batch of ${grouping.maxSize}` : grouping.kind;

    test(`${name}: concurrent calls each get their own answer`, async () => {
      const run = createWriteBatcher(t.db, grouping, eachInTurn((db, input: { serial: string; ip: string }) => writeIp(db, input)()));

      const answers = await Promise.all(serials.map((serial) => run({ serial, ip: `${name}-${serial}` })));

      assert.deepEqual(
        answers,
        serials.map((serial) => ({ serial, ip: `${name}-${serial}` })),
      );
    });

    test(`${name}: a failing call fails alone, and the others' writes are kept`, async () => {
      const run = createWriteBatcher(t.db, grouping, eachInTurn((db, input: { serial: string; ip: string }) => writeIp(db, input)()));
      const inputs = serials.map((serial, index) => ({ serial, ip: index === 4 ? 'bad' : `kept-${name}-${serial}` }));

      const results = await Promise.allSettled(inputs.map((input) => run(input)));

      results.forEach((result, index) => assert.equal(result.status, index === 4 ? 'rejected' : 'fulfilled', `call ${index}`));
      for (const [index, serial] of serials.entries()) {
        if (index !== 4) assert.equal(await lastIp(other, serial), `kept-${name}-${serial}`);
      }
      assert.notEqual(await lastIp(other, serials[4]!), 'bad');
    });

    test(`${name}: a call settles only once its write is committed`, async () => {
      const run = createWriteBatcher(t.db, grouping, eachInTurn((db, input: { serial: string; ip: string }) => writeIp(db, input)()));

      const seen = await Promise.all(
        serials.map((serial) => run({ serial, ip: `committed-${name}` }).then(() => lastIp(other, serial))),
      );

      assert.deepEqual(
        seen,
        serials.map(() => `committed-${name}`),
      );
    });
  }

  test('when the database is unavailable, the calls of a batch all fail at once rather than again one by one', async () => {
    let attempts = 0;
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const run = createWriteBatcher(t.db, { kind: 'batch', maxSize: 64 }, async () => {
      attempts++;
      throw refused;
    });

    const results = await Promise.allSettled(serials.map((serial) => run({ serial })));

    assert.ok(results.every((result) => result.status === 'rejected' && result.reason === refused));
    assert.equal(attempts, 1);
  });

  test('a batch that lost a race for locks runs again as a whole, its first run rolled back', async () => {
    const conflict = Object.assign(new Error('could not obtain lock on row in relation "okm_polls"'), { code: '55P03' });
    let runs = 0;
    const run = createWriteBatcher(t.db, { kind: 'batch', maxSize: 64 }, async (db, batch: readonly string[]) => {
      runs++;
      await db.updateTable('okm_polls').set({ last_ip: `run-${runs}` }).where('serial_number', 'in', batch).execute();
      if (runs === 1) throw conflict;
      return Promise.all(batch.map((serial) => lastIp(db, serial)));
    });

    const answers = await Promise.all(serials.slice(0, 3).map((serial) => run(serial)));

    assert.equal(runs, 2);
    assert.deepEqual(answers, ['run-2', 'run-2', 'run-2']);
  });

  test('a call whose transaction keeps losing races for locks fails after three runs, alone or in a batch', async () => {
    const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    for (const grouping of [{ kind: 'transaction' }, { kind: 'batch', maxSize: 64 }] as const) {
      let runs = 0;
      const run = createWriteBatcher(t.db, grouping, async () => {
        runs++;
        throw deadlock;
      });

      await assert.rejects(run('BATCH-0'), deadlock);

      assert.equal(runs, 3, grouping.kind);
    }
  });

  test('calls of the same event-loop turn are given to the work together, in one transaction, up to the batch size', async () => {
    const transactions: Db[] = [];
    const batchSizes: number[] = [];
    const run = createWriteBatcher(t.db, { kind: 'batch', maxSize: 4 }, async (db, batch: readonly string[]) => {
      transactions.push(db);
      batchSizes.push(batch.length);
      return Promise.all(batch.map((serial) => lastIp(db, serial)));
    });

    await Promise.all(serials.map((serial) => run(serial)));

    assert.equal(transactions.length, Math.ceil(serials.length / 4));
    assert.equal(new Set(transactions).size, transactions.length);
    // The batches' transactions start in the order their connections come (PostgreSQL's pool), not the order of the batches.
    assert.deepEqual([...batchSizes].sort(), [2, 4, 4]);
    assert.ok(!transactions.includes(t.db));
  });
  test('with batchesAtOnce, calls that arrive while the batches run wait and go together in the next batch', async () => {
    let running = 0;
    let mostAtOnce = 0;
    const batchSizes: number[] = [];
    const firstBatchStarted = heldUntilReleased();
    const firstBatch = heldUntilReleased();
    const run = createWriteBatcher(t.db, { kind: 'batch', maxSize: 64, batchesAtOnce: 1 }, async (db, batch: readonly string[]) => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      batchSizes.push(batch.length);
      // The first batch runs until the later calls have all arrived, each in an event-loop turn of its own.
      if (batchSizes.length === 1) {
        firstBatchStarted.release();
        await firstBatch.held;
      }
      const answers = await Promise.all(batch.map((serial) => lastIp(db, serial)));
      running -= 1;
      return answers;
    });

    const first = run(serials[0]!);
    await firstBatchStarted.held;
    const later: Promise<string>[] = [];
    for (const serial of serials.slice(1)) {
      later.push(run(serial));
      await new Promise((resolve) => setImmediate(resolve));
    }
    firstBatch.release();
    const answers = await Promise.all([first, ...later]);

    assert.equal(answers.length, serials.length);
    assert.equal(mostAtOnce, 1);
    // Without the bound, each of the nine later calls (one per turn) would have been a batch of its own.
    assert.deepEqual(batchSizes, [1, serials.length - 1]);
  });
  test('with batchesAtOnce, a queue longer than the batch size goes in batches of at most that size', async () => {
    const batchSizes: number[] = [];
    const firstBatchStarted = heldUntilReleased();
    const firstBatch = heldUntilReleased();
    const run = createWriteBatcher(t.db, { kind: 'batch', maxSize: 3, batchesAtOnce: 1 }, async (db, batch: readonly string[]) => {
      batchSizes.push(batch.length);
      if (batchSizes.length === 1) {
        firstBatchStarted.release();
        await firstBatch.held;
      }
      return Promise.all(batch.map((serial) => lastIp(db, serial)));
    });

    const first = run(serials[0]!);
    await firstBatchStarted.held;
    // Each in an event-loop turn of its own, while the first batch runs: the queue outgrows the batch size.
    const later: Promise<string>[] = [];
    for (const serial of serials.slice(1)) {
      later.push(run(serial));
      await new Promise((resolve) => setImmediate(resolve));
    }
    firstBatch.release();
    await Promise.all([first, ...later]);

    assert.deepEqual(batchSizes, [1, 3, 3, 3]);
  });
  test('with a lock key, a batch runs its calls in key order and each caller still gets its own answer', async () => {
    const ran: string[] = [];
    const record = createWriteBatcher(
      t.db,
      { kind: 'batch', maxSize: 64 },
      eachInTurn(async (db, serial: string) => {
        ran.push(serial);
        await db.updateTable('okm_polls').set({ last_ip: `ip-${serial}` }).where('serial_number', '=', serial).execute();
        return lastIp(db, serial);
      }),
      (serial) => serial,
    );
    const arrival = ['BATCH-7', 'BATCH-2', 'BATCH-9', 'BATCH-0', 'BATCH-5'];

    const answers = await Promise.all(arrival.map((serial) => record(serial)));

    assert.deepEqual(ran, [...arrival].sort());
    assert.deepEqual(answers, arrival.map((serial) => `ip-${serial}`));
  });
});
