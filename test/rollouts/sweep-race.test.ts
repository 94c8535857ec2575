import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { unavailableReason } from '../helpers/databases.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, pollAll, recordingEmitter } from './fleet-helpers.ts';

// Several processes sweep one PostgreSQL database: here, two connections pools of one process.
describe('two rollout sweepers racing on one PostgreSQL database', async () => {
  const skip = await unavailableReason('postgres');
  let t: TestApp;
  let other: Db;
  let more: Db[];
  let writer: ReturnType<typeof api>;
  let customerId: number;
  before(async () => {
    if (skip) return;
    mock.timers.enable({ apis: ['Date'], now: Date.UTC(2026, 10, 20, 11, 0) });
    t = await buildTestApp('postgres', { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    other = openDatabase(dialectFor(t.settings)).db;
    more = Array.from({ length: 5 }, () => openDatabase(dialectFor(t.settings)).db);
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    customerId = (await createTestCustomer(t, 'acme')).id;
    writer = api(t, await customerWriter(t, 'acme'));
  });
  after(async () => {
    if (skip) return;
    await other.destroy();
    await Promise.all(more.map((db) => db.destroy()));
    await t.close();
    mock.timers.reset();
  });

  const race = async (emit: ReturnType<typeof recordingEmitter>['emit'], failuresPerSweep = 5_000) => {
    const limits = { rollouts: 100, failures: failuresPerSweep };
    await Promise.all([sweepRollouts(t.db, t.dialect, emit, Date.now(), limits), sweepRollouts(other, t.dialect, emit, Date.now(), limits), sweepRollouts(t.db, t.dialect, emit, Date.now(), limits)]);
  };
  const view = async (id: number) => (await writer.get(id)).json().data as RolloutView;

  test('each group is started once and the rollout finished once, however the sweepers interleave', { skip }, async () => {
    const fleet = await createFleet(t, customerId, 100, '1.0', 'RACE');
    const recorder = recordingEmitter();
    const rollout = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 10 }, { percent: 50 }, { percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } })).json().data;
    await writer.act(rollout.id, 'start');

    for (let step = 0; step < 3; step++) {
      await pollAll(t, fleet);
      await pollAll(t, fleet);
      await race(recorder.emit);
      await race(recorder.emit);
    }

    assert.deepEqual(recorder.events.map((event) => [event.type, event.data.group ?? null]), [
      ['rollout.group_started', 1],
      ['rollout.group_started', 2],
      ['rollout.finished', null],
    ]);
    assert.deepEqual((await view(rollout.id)).totals, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 100, failed: 0 });
  });

  test('offers past their timeout are each counted failed once, none lost, and the rollout pauses once', { skip }, async () => {
    const fleet = await createFleet(t, customerId, 60, '1.0', 'RACE-FAIL');
    for (const okm of fleet) okm.refusesUpdates = true;
    const recorder = recordingEmitter();
    const rollout = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], update_timeout: '1m', error_threshold: 50, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } })).json().data;
    await writer.act(rollout.id, 'start');
    await pollAll(t, fleet);
    mock.timers.tick(61_000);
    await pollAll(t, fleet);

    // Few failures per sweep: the sweepers contend for the same rows, pass after pass. They
    // often pick the same rows (one wins each), so race until the totals stop changing.
    let totals = (await view(rollout.id)).totals;
    let passes = 0;
    for (; passes < 40; passes++) {
      await race(recorder.emit, 7);
      const next = (await view(rollout.id)).totals;
      if (isDeepStrictEqual(next, totals)) break;
      totals = next;
    }

    assert.ok(passes < 40, `the totals still changed after ${passes} passes: ${JSON.stringify(totals)}`);
    const paused = await view(rollout.id);
    assert.deepEqual(paused.totals, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 60 });
    assert.equal(paused.state, 'paused');
    assert.deepEqual(recorder.events.map((event) => event.type), ['rollout.paused']);
  });

  test('sweepers racing mark disjoint members, none waiting on another: each pass of 7 sweepers of 3 failures marks 21, and each failure is counted once', { skip }, async () => {
    const fleet = await createFleet(t, customerId, 240, '1.0', 'RACE-MANY');
    for (const okm of fleet) okm.refusesUpdates = true;
    const rollout = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], update_timeout: '1m', error_threshold: 100, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } })).json().data;
    await writer.act(rollout.id, 'start');
    await pollAll(t, fleet);
    mock.timers.tick(61_000);
    await pollAll(t, fleet);

    // Two sweepers picking the same members would lock them in whatever order each plan visits
    // them (PostgreSQL broke such a pair off as a deadlock), and one of them would mark nothing.
    const emit = recordingEmitter().emit;
    const sweepers = [t.db, other, ...more];
    const marked: number[] = [];
    let failed = 0;
    while (failed < fleet.length && marked.length < 20) {
      await Promise.all(sweepers.map((db) => sweepRollouts(db, t.dialect, emit, Date.now(), { rollouts: 100, failures: 3 })));
      const now = (await view(rollout.id)).totals.failed;
      marked.push(now - failed);
      failed = now;
    }

    assert.deepEqual(marked, [...Array(11).fill(21), 9]);
    assert.deepEqual((await view(rollout.id)).totals, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 240 });
  });
});
