import assert from 'node:assert/strict';
import { after, before, mock, test } from 'node:test';
import { setCustomerTimeZone } from '../../src/customers/repository.ts';
import type { Db } from '../../src/db/database.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, pollAll, recordingEmitter, type SimulatedOkm } from './fleet-helpers.ts';

// 12:00 in Berlin (CET, UTC+1): outside a 22:00–06:00 maintenance window there.
const NOON_IN_BERLIN = Date.UTC(2026, 10, 20, 11, 0);

const offeredIn = (fleet: readonly SimulatedOkm[], before: Map<string, number>) =>
  fleet.filter((okm) => okm.offers.length > (before.get(okm.serialNumber) ?? 0)).map((okm) => okm.serialNumber);
const offerCounts = (fleet: readonly SimulatedOkm[]) => new Map(fleet.map((okm) => [okm.serialNumber, okm.offers.length]));

forEachDatabase('rollouts driven by a fleet of simulated OKMs over HTTP', (kind) => {
  let t: TestApp;
  let writer: ReturnType<typeof api>;
  let customerId: number;
  before(async () => {
    mock.timers.enable({ apis: ['Date'], now: NOON_IN_BERLIN });
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    for (const version of ['1.0', '1.5', '2.0', '2.5', '3.0']) await addRelease(t.db, 'kas', version, { fleetLatest: version === '1.0' });
    customerId = (await createTestCustomer(t, 'acme')).id;
    writer = api(t, await customerWriter(t, 'acme', 'alice'));
  });
  after(async () => {
    await t.close();
    mock.timers.reset();
  });

  const sweep = (emit = recordingEmitter().emit, db: Db = t.db) => sweepRollouts(db, t.dialect, emit, Date.now());
  const view = async (id: number) => (await writer.get(id)).json().data as RolloutView;
  const create = async (body: Record<string, unknown>) => {
    const response = await writer.create({ kind: 'kas', version: '2.0', ...body });
    assert.equal(response.statusCode, 201, response.body);
    return response.json().data as RolloutView;
  };
  const act = async (id: number, action: string) => {
    const response = await writer.act(id, action);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as RolloutView;
  };

  test('1 000 OKMs in groups of 1 %, 10 %, 100 %: only the started group is offered the version, and each group that takes it starts the next', async () => {
    const fleet = await createFleet(t, customerId, 1000, '1.0', 'STAGED');
    await pollAll(t, fleet);
    const recorder = recordingEmitter();

    const created = await create({ groups: [{ percent: 1 }, { percent: 10 }, { percent: 100 }] });
    assert.equal(created.state, 'ready');
    assert.deepEqual(created.groups.map((group) => group.okms), [10, 90, 900]);
    const firstGroup = (await t.db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', created.id).where('group_index', '=', 0).execute()).map((row) => row.serial_number).sort();
    assert.notDeepEqual(firstGroup, fleet.slice(0, 10).map((okm) => okm.serialNumber), 'spread over the fleet, not the first serials');

    await act(created.id, 'start');
    let before = offerCounts(fleet);
    await pollAll(t, fleet);
    assert.deepEqual(offeredIn(fleet, before).sort(), firstGroup, 'only the first group is offered 2.0; the others keep the fleet latest');
    assert.deepEqual((await view(created.id)).groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 10, updated: 0, failed: 0 });

    await pollAll(t, fleet);
    await sweep(recorder.emit);
    const afterFirst = await view(created.id);
    assert.deepEqual(afterFirst.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 10, failed: 0 });
    assert.equal(afterFirst.current_group, 1);

    before = offerCounts(fleet);
    await pollAll(t, fleet);
    assert.equal(offeredIn(fleet, before).length, 90);
    await pollAll(t, fleet);
    await sweep(recorder.emit);
    await pollAll(t, fleet);
    await pollAll(t, fleet);
    await sweep(recorder.emit);

    const finished = await view(created.id);
    assert.equal(finished.state, 'finished');
    assert.deepEqual(finished.totals, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 1000, failed: 0 });
    assert.deepEqual(recorder.events.map((event) => [event.type, event.data.group ?? null]), [
      ['rollout.group_started', 1],
      ['rollout.group_started', 2],
      ['rollout.finished', null],
    ]);
    assert.ok(fleet.every((okm) => okm.parameters.kasFirmware === '2.0' && okm.offers.length === 1));
  });

  test('a rollout whose OKMs refuse the update pauses itself past its error threshold, calls the fleet-event emitter with rollout.paused, and offers nothing while paused', async () => {
    const fleet = await createFleet(t, customerId, 200, '1.0', 'REFUSE');
    for (const okm of fleet) okm.refusesUpdates = true;
    const recorder = recordingEmitter();
    const rollout = await create({ groups: [{ percent: 10 }, { percent: 100 }], update_timeout: '1m', filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    await act(rollout.id, 'start');
    await pollAll(t, fleet);

    mock.timers.tick(61_000);
    await pollAll(t, fleet);
    await sweep(recorder.emit);

    const paused = await view(rollout.id);
    assert.equal(paused.state, 'paused');
    assert.equal(paused.state_reason, 'error_threshold');
    assert.deepEqual(paused.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 20 });
    assert.deepEqual(recorder.events, [
      { type: 'rollout.paused', customerId, data: { rollout_id: rollout.id, customer: 'acme', kind: 'kas', version: '2.0', reason: 'error_threshold', group: 0, failed: 20 } },
    ]);
    const before = offerCounts(fleet);
    await pollAll(t, fleet);
    assert.deepEqual(offeredIn(fleet, before), []);
    await act(rollout.id, 'abort');
  });

  test('OKMs silent since their group started count as failed once update_timeout has passed, so the error threshold pauses a rollout that would otherwise run for ever; one that polls again after a resume is offered the version and counts as updated once it reports it', async () => {
    const fleet = await createFleet(t, customerId, 20, '1.0', 'SILENT');
    const rollout = await create({ groups: [{ percent: 100 }], update_timeout: '1m', filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    await act(rollout.id, 'start');
    const [quiet, polling] = [fleet.slice(0, 4), fleet.slice(4)];
    await pollAll(t, polling);
    await pollAll(t, polling);

    await sweep();
    const waiting = await view(rollout.id);
    assert.deepEqual(waiting.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 4, offered: 0, updated: 16, failed: 0 });
    assert.equal(waiting.state, 'running');
    mock.timers.tick(61_000);
    await sweep();

    const judged = await view(rollout.id);
    assert.deepEqual(judged.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 16, failed: 4 });
    assert.equal(judged.state, 'paused');
    assert.equal(judged.state_reason, 'error_threshold');
    await act(rollout.id, 'resume');
    await quiet[0]!.poll(t);
    assert.deepEqual(quiet[0]!.offers, ['2.0']);
    await quiet[0]!.poll(t);
    assert.deepEqual((await view(rollout.id)).groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 17, failed: 3 });
    await act(rollout.id, 'abort');
  });
  test('abort: from the next poll on no OKM that has not updated is offered the version; aborting again changes nothing', async () => {
    const fleet = await createFleet(t, customerId, 50, '1.0', 'ABORT');
    for (const okm of fleet) okm.refusesUpdates = true;
    const rollout = await create({ groups: [{ percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    await act(rollout.id, 'start');
    await pollAll(t, fleet);
    assert.equal(offeredIn(fleet, new Map()).length, 50);

    const aborted = await act(rollout.id, 'abort');
    const before = offerCounts(fleet);
    await pollAll(t, fleet);
    const again = await act(rollout.id, 'abort');

    assert.equal(aborted.state, 'aborted');
    assert.deepEqual(offeredIn(fleet, before), []);
    assert.equal(again.state, 'aborted');
    assert.equal((await t.db.selectFrom('okms').select('serial_number').where('rollout_id', '=', rollout.id).execute()).length, 0);
  });

  test("an OKM's own pin wins, an OKM already newer is left out, and a newer fleet latest is never stepped back from", async () => {
    const [pinnedBefore, newer, pinnedAfter, plain] = await createFleet(t, customerId, 4, '1.0', 'PIN');
    newer!.parameters.kasFirmware = '3.0';
    await t.db.updateTable('okms').set({ kas_firmware: '1.5' }).where('serial_number', '=', pinnedBefore!.serialNumber).execute();
    const all = [pinnedBefore!, newer!, pinnedAfter!, plain!];
    await pollAll(t, all);
    const rollout = await create({ groups: [{ percent: 100 }], filter: { serial_numbers: all.map((okm) => okm.serialNumber) } });
    assert.equal(rollout.groups[0]!.okms, 2, 'the pinned and the newer OKM are not members');

    await act(rollout.id, 'start');
    await t.db.updateTable('okms').set({ kas_firmware: '1.5' }).where('serial_number', '=', pinnedAfter!.serialNumber).execute();
    await t.db.updateTable('fleet_firmware').set({ version: '2.5' }).where('kind', '=', 'kas').execute();
    await pollAll(t, all);
    await t.db.updateTable('fleet_firmware').set({ version: '1.0' }).where('kind', '=', 'kas').execute();

    assert.deepEqual(pinnedBefore!.offers, ['1.5']);
    assert.deepEqual(newer!.offers, []);
    assert.deepEqual(pinnedAfter!.offers, ['1.5']);
    assert.deepEqual(plain!.offers, ['2.5']);
    await act(rollout.id, 'abort');
  });

  test("outside its maintenance window (the customer's time zone) a rollout offers nothing; inside it, it offers", async () => {
    mock.timers.setTime(NOON_IN_BERLIN);
    await setCustomerTimeZone(t.db, 'acme', 'Europe/Berlin');
    const fleet = await createFleet(t, customerId, 20, '1.0', 'WINDOW');
    const rollout = await create({ groups: [{ percent: 100 }], maintenance_window: { from: '22:00', to: '06:00' }, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    await act(rollout.id, 'start');

    await pollAll(t, fleet);
    const atNoon = offeredIn(fleet, new Map());
    mock.timers.setTime(Date.UTC(2026, 10, 20, 21, 30));
    await pollAll(t, fleet);
    const atHalfPastTen = offeredIn(fleet, new Map());

    assert.deepEqual(atNoon, []);
    assert.equal(atHalfPastTen.length, 20);
    assert.deepEqual((await view(rollout.id)).maintenance_window, { from: '22:00', to: '06:00', time_zone: 'Europe/Berlin' });
    await setCustomerTimeZone(t.db, 'acme', null);
    mock.timers.setTime(NOON_IN_BERLIN);
  });

  test('four eyes: a rollout that requires approval starts only once an operator other than its creator approved it, recorded with who and when', async () => {
    const fleet = await createFleet(t, customerId, 5, '1.0', 'APPROVE');
    const bob = api(t, await customerWriter(t, 'acme', 'bob'));
    const rollout = await create({ groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });

    const tooEarly = await writer.act(rollout.id, 'start');
    const bySelf = await writer.act(rollout.id, 'approve');
    const byBob = await bob.act(rollout.id, 'approve');
    const started = await writer.act(rollout.id, 'start');

    assert.equal(tooEarly.statusCode, 409);
    assert.equal(tooEarly.json().error_msg, `rollout ${rollout.id} needs the approval of another operator before it starts`);
    assert.equal(bySelf.statusCode, 409);
    assert.equal(bySelf.json().error_msg, `rollout ${rollout.id} was created by alice: another operator (token subject) must approve it`);
    assert.equal(byBob.statusCode, 200);
    assert.equal(byBob.json().data.approved_by, 'bob');
    assert.equal(byBob.json().data.approved_at, new Date(Date.now()).toISOString());
    assert.equal(started.json().data.state, 'running');
    await act(rollout.id, 'abort');
  });

  test('two operators approving one rollout at once: exactly one approval is recorded and the other is told who approved (409); one operator approving twice at once is answered 200 twice', async () => {
    const fleet = await createFleet(t, customerId, 6, '1.0', 'APPROVE-RACE');
    const bob = api(t, await customerWriter(t, 'acme', 'bob'));
    const carol = api(t, await customerWriter(t, 'acme', 'carol'));
    const approvalRequired = async (okm: SimulatedOkm) => create({ groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: [okm.serialNumber] } });

    for (const okm of fleet.slice(0, 5)) {
      const rollout = await approvalRequired(okm);

      const answers = await Promise.all([bob.act(rollout.id, 'approve'), carol.act(rollout.id, 'approve')]);

      const recorded = await view(rollout.id);
      assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 409], answers.map((answer) => answer.body).join('\n'));
      const winner = answers.find((answer) => answer.statusCode === 200)!.json().data as RolloutView;
      const loser = answers.find((answer) => answer.statusCode === 409)!.json();
      assert.deepEqual([winner.approved_by, winner.approved_at], [recorded.approved_by, recorded.approved_at]);
      assert.equal(loser.error_msg, `rollout ${rollout.id} was already approved by ${recorded.approved_by}`);
      await act(rollout.id, 'abort');
    }
    const rollout = await approvalRequired(fleet[5]!);
    const twice = await Promise.all([bob.act(rollout.id, 'approve'), bob.act(rollout.id, 'approve')]);
    assert.deepEqual(twice.map((answer) => answer.statusCode), [200, 200], twice.map((answer) => answer.body).join('\n'));
    assert.deepEqual(twice.map((answer) => answer.json().data.approved_by), ['bob', 'bob']);
    await act(rollout.id, 'abort');
  });

  test('a rollout with start_at starts itself at the first sweep after that time, not before', async () => {
    const fleet = await createFleet(t, customerId, 5, '1.0', 'START-AT');
    const recorder = recordingEmitter();
    const rollout = await create({ groups: [{ percent: 100 }], start_at: new Date(Date.now() + 60_000).toISOString(), filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });

    await sweep(recorder.emit);
    const early = (await view(rollout.id)).state;
    mock.timers.tick(60_000);
    await sweep(recorder.emit);

    assert.equal(early, 'ready');
    assert.equal((await view(rollout.id)).state, 'running');
    assert.deepEqual(recorder.events.map((event) => event.type), ['rollout.started', 'rollout.group_started']);
    await act(rollout.id, 'abort');
  });
});
