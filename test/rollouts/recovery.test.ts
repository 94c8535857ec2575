import assert from 'node:assert/strict';
import { after, before, mock, test } from 'node:test';
import type { RolloutOkmView, RolloutView } from '../../src/rollouts/schemas.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, pollAll, recordingEmitter, type SimulatedOkm } from './fleet-helpers.ts';

const START = Date.UTC(2026, 10, 20, 11, 0);

/**
 * Recovering a paused rollout (docs/rollouts.md): its thresholds change while paused, its failed
 * OKMs are retried or excluded, and Resume pauses it again only for failures after the resume.
 */
forEachDatabase('recovering a paused rollout', (kind) => {
  let t: TestApp;
  let writer: ReturnType<typeof api>;
  let token: string;
  let customerId: number;
  before(async () => {
    mock.timers.enable({ apis: ['Date'], now: START });
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    for (const version of ['1.0', '2.0']) await addRelease(t.db, 'kas', version, { fleetLatest: version === '1.0' });
    customerId = (await createTestCustomer(t, 'acme')).id;
    token = await customerWriter(t, 'acme', 'alice');
    writer = api(t, token);
  });
  after(async () => {
    await t.close();
    mock.timers.reset();
  });

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const sweep = () => sweepRollouts(t.db, t.dialect, recordingEmitter().emit, Date.now());
  const view = async (id: number) => (await writer.get(id)).json().data as RolloutView;
  const act = async (id: number, action: string) => {
    const response = await writer.act(id, action);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as RolloutView;
  };
  const okmsOf = async (id: number, state: string) =>
    ((await call('GET', `/api/v1/rollouts/${id}/okms?state=${state}`)).json().data as RolloutOkmView[]).map((okm) => okm.serial_number);
  /** The member's state; a refusing OKM is stuck on its offer by now, so a retried one reads blocked until it takes it. */
  const stateOf = async (id: number, serial: string) =>
    ((await call('GET', `/api/v1/rollouts/${id}/okms`)).json().data as RolloutOkmView[]).find((okm) => okm.serial_number === serial)?.state;

  /**
   * 20 OKMs in one group, update_timeout 1 min, error threshold 10 %: 4 refuse the update from the
   * start (offered at once), a 5th refuses it too but first polls 30 s later. One minute on, the 4
   * have failed (20 %) and the rollout pauses itself; the 5th fails 30 s after them.
   */
  async function pausedRollout(prefix: string): Promise<{ rollout: RolloutView; fleet: SimulatedOkm[]; refusing: SimulatedOkm[]; late: SimulatedOkm }> {
    const fleet = await createFleet(t, customerId, 20, '1.0', prefix);
    const [refusing, late] = [fleet.slice(0, 4), fleet[4]!];
    for (const okm of [...refusing, late]) okm.refusesUpdates = true;
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], update_timeout: '1m', error_threshold: 10, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    assert.equal(created.statusCode, 201, created.body);
    const rollout = created.json().data as RolloutView;
    await act(rollout.id, 'start');
    const early = fleet.filter((okm) => okm !== late);
    await pollAll(t, early);
    await pollAll(t, early);
    mock.timers.tick(30_000);
    await late.poll(t);
    mock.timers.tick(31_000);
    await pollAll(t, refusing);
    await sweep();
    const paused = await view(rollout.id);
    assert.deepEqual([paused.state, paused.state_reason, paused.groups[0]!.counts.failed, paused.groups[0]!.counts.offered], ['paused', 'error_threshold', 4, 1]);
    return { rollout: paused, fleet, refusing, late };
  }

  test('Resume after a pause: the failures resumed over do not pause it again; a failure after the resume does', async () => {
    const { rollout, late } = await pausedRollout('RESUME');

    const resumed = await act(rollout.id, 'resume');
    assert.equal(resumed.resumed_at, new Date(Date.now()).toISOString());
    mock.timers.tick(5_000);
    await sweep();
    mock.timers.tick(5_000);
    await sweep();
    assert.equal((await view(rollout.id)).state, 'running', 'the 4 old failures (20 % > 10 %) do not pause it again');

    mock.timers.tick(25_000);
    await late.poll(t);
    await sweep();
    const again = await view(rollout.id);
    assert.deepEqual([again.state, again.state_reason, again.groups[0]!.counts.failed], ['paused', 'error_threshold', 5]);
    await act(rollout.id, 'abort');
  });

  test('the thresholds of a paused rollout change (PATCH), recorded with before and after; while running it is 409; what it is already set to changes nothing', async () => {
    const { rollout } = await pausedRollout('THRESHOLD');
    const mark = await lastAuditId(t.db);

    const changed = await call('PATCH', `/api/v1/rollouts/${rollout.id}`, { error_threshold: 30, update_timeout: '2h', auto_advance: true });
    assert.equal(changed.statusCode, 200, changed.body);
    const data = changed.json().data as RolloutView;
    assert.deepEqual([data.error_threshold, data.update_timeout, data.success_threshold, data.state], [30, '2h', 95, 'paused']);
    const same = await call('PATCH', `/api/v1/rollouts/${rollout.id}`, { error_threshold: 30 });
    assert.equal(same.statusCode, 200);
    const entries = await auditEntriesAfter(t.db, mark);
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.entity.id, entry.before, entry.after]),
      [['rollout.updated', String(rollout.id), { error_threshold: 10, update_timeout: '1m' }, { error_threshold: 30, update_timeout: '2h' }]],
    );

    await act(rollout.id, 'resume');
    await sweep();
    assert.equal((await view(rollout.id)).state, 'running', '20 % failed is within the new 30 %');
    const running = await call('PATCH', `/api/v1/rollouts/${rollout.id}`, { error_threshold: 50 });
    assert.deepEqual([running.statusCode, running.json().error_msg], [409, `rollout ${rollout.id} is running: its thresholds change only while it is ready or paused (pause it first)`]);
    const empty = await call('PATCH', `/api/v1/rollouts/${rollout.id}`, {});
    assert.equal(empty.statusCode, 400);
    const tooHigh = await call('PATCH', `/api/v1/rollouts/${rollout.id}`, { success_threshold: 101 });
    assert.deepEqual([tooHigh.statusCode, tooHigh.json().error_msg], [400, 'success_threshold: must be <= 100']);
    await act(rollout.id, 'abort');
  });

  test('retry: a failed OKM is scheduled again, offered the version again (as soon as its own retry policy lets the offer through) and counts as updated once it takes it; a serial that is not a failed member is 409', async () => {
    const { rollout, refusing } = await pausedRollout('RETRY');
    const [retried] = refusing;
    const mark = await lastAuditId(t.db);

    const notFailed = await call('POST', `/api/v1/rollouts/${rollout.id}/okms/retry`, { serial_numbers: [retried!.serialNumber, 'NOT-IN-IT'] });
    assert.deepEqual([notFailed.statusCode, notFailed.json().error_msg], [409, `not failed OKMs of rollout ${rollout.id}: NOT-IN-IT`]);
    const answer = await call('POST', `/api/v1/rollouts/${rollout.id}/okms/retry`, { serial_numbers: [retried!.serialNumber] });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.deepEqual((answer.json().data as RolloutView).groups[0]!.counts.failed, 3);
    assert.equal(await stateOf(rollout.id, retried!.serialNumber), 'blocked');
    assert.deepEqual(
      (await auditEntriesAfter(t.db, mark)).map((entry) => [entry.action, entry.after]),
      [['rollout.members_retried', { okms: 1, serial_numbers: [retried!.serialNumber] }]],
    );

    await act(rollout.id, 'resume');
    await sweep();
    assert.equal(await stateOf(rollout.id, retried!.serialNumber), 'blocked', 'a retried member is not failed again by the sweep at once');
    retried!.refusesUpdates = false;
    // The OKM's own retry policy still spaces its offers (held back for a few polls after 3 offers not taken).
    const offersBefore = retried!.offers.length;
    for (let polls = 0; polls < 10 && retried!.offers.length === offersBefore; polls++) await retried!.poll(t);
    assert.equal(retried!.offers.length, offersBefore + 1, 'offered the version again');
    await retried!.poll(t);
    assert.ok((await okmsOf(rollout.id, 'updated')).includes(retried!.serialNumber));
    await act(rollout.id, 'abort');
    const aborted = await call('POST', `/api/v1/rollouts/${rollout.id}/okms/retry`, {});
    assert.deepEqual([aborted.statusCode, aborted.json().error_msg], [409, `rollout ${rollout.id} is aborted: it cannot be retried`]);
  });

  test('a retried OKM that still does not take the offer fails again once update_timeout has passed after it is offered again, a new failure that pauses the resumed rollout', async () => {
    const { rollout, refusing } = await pausedRollout('REFAIL');
    const [retried] = refusing;
    await call('POST', `/api/v1/rollouts/${rollout.id}/okms/retry`, { serial_numbers: [retried!.serialNumber] });
    await act(rollout.id, 'resume');
    await sweep();
    assert.notEqual(await stateOf(rollout.id, retried!.serialNumber), 'failed');
    for (let round = 0; round < 12 && (await stateOf(rollout.id, retried!.serialNumber)) !== 'failed'; round++) {
      mock.timers.tick(31_000);
      await retried!.poll(t);
      await sweep();
    }
    assert.equal(await stateOf(rollout.id, retried!.serialNumber), 'failed');
    assert.equal((await view(rollout.id)).state, 'paused', 'its failure is new since the resume');
    await act(rollout.id, 'abort');
  });

  test('exclude: every failed OKM leaves the rollout, is no longer counted nor offered its version', async () => {
    const { rollout, refusing } = await pausedRollout('EXCLUDE');
    const mark = await lastAuditId(t.db);

    const answer = await call('POST', `/api/v1/rollouts/${rollout.id}/okms/exclude`, {});
    assert.equal(answer.statusCode, 200, answer.body);
    const data = answer.json().data as RolloutView;
    assert.deepEqual([data.groups[0]!.okms, data.groups[0]!.counts.failed], [16, 0]);
    const excluded = refusing.map((okm) => okm.serialNumber).sort();
    assert.deepEqual(
      (await auditEntriesAfter(t.db, mark)).map((entry) => [entry.action, entry.after]),
      [['rollout.members_excluded', { okms: 4, serial_numbers: excluded }]],
    );
    const rows = await t.db.selectFrom('okms').select('rollout_id').where('serial_number', 'in', excluded).execute();
    assert.ok(rows.every((row) => row.rollout_id === null));
    const offersBefore = refusing[0]!.offers.length;
    await refusing[0]!.poll(t);
    assert.equal(refusing[0]!.offers.length, offersBefore, 'the fleet latest (1.0) again: nothing to offer');
    const none = await call('POST', `/api/v1/rollouts/${rollout.id}/okms/exclude`, { serial_numbers: [refusing[0]!.serialNumber] });
    assert.equal(none.statusCode, 409);
    await act(rollout.id, 'abort');
  });

  test("a ready rollout's thresholds change too; another customer's rollout is not found; a finished one's failed OKMs are neither retried nor excluded", async () => {
    const fleet = await createFleet(t, customerId, 2, '1.0', 'READYPATCH');
    const created = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } })).json().data as RolloutView;
    const ready = await call('PATCH', `/api/v1/rollouts/${created.id}`, { success_threshold: 80, auto_advance: false });
    assert.equal(ready.statusCode, 200, ready.body);
    assert.deepEqual([ready.json().data.success_threshold, ready.json().data.auto_advance, ready.json().data.state], [80, false, 'ready']);

    await createTestCustomer(t, 'globex');
    const globex = await customerWriter(t, 'globex');
    const foreign = await t.app.inject({ method: 'PATCH', url: `/api/v1/rollouts/${created.id}`, headers: { authorization: `Bearer ${globex}` }, payload: { error_threshold: 1 } });
    assert.equal(foreign.statusCode, 404);

    await act(created.id, 'start');
    await act(created.id, 'advance');
    for (const path of ['retry', 'exclude']) {
      const finished = await call('POST', `/api/v1/rollouts/${created.id}/okms/${path}`, {});
      assert.equal(finished.statusCode, 409, path);
    }
    const finishedPatch = await call('PATCH', `/api/v1/rollouts/${created.id}`, { error_threshold: 1 });
    assert.equal(finishedPatch.statusCode, 409);
  });

  test('each started group says when one fleet polling interval has passed since it started, and each OKM when its own has: until then a silent OKM is waiting for its first poll', async () => {
    const fleet = await createFleet(t, customerId, 3, '1.0', 'FIRSTPOLL');
    await t.db.updateTable('okms').set({ polling_interval: 30 }).where('serial_number', '=', fleet[0]!.serialNumber).execute();
    const created = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } })).json().data as RolloutView;
    assert.deepEqual(created.groups.map((group) => [group.started_at, group.first_polls_by]), [[null, null], [null, null]]);
    const started = await act(created.id, 'start');
    const startedAt = Date.now();
    assert.deepEqual(started.groups.map((group) => [group.started_at, group.first_polls_by]), [
      [new Date(startedAt).toISOString(), new Date(startedAt + t.settings.fleetPollingInterval * 1000).toISOString()],
      [null, null],
    ]);
    const listed = (await call('GET', `/api/v1/rollouts/${created.id}/okms`)).json().data as RolloutOkmView[];
    for (const okm of listed) {
      const own = okm.serial_number === fleet[0]!.serialNumber ? 30 : t.settings.fleetPollingInterval;
      assert.equal(okm.first_poll_due_at, okm.group === 0 ? new Date(startedAt + own * 1000).toISOString() : null, okm.serial_number);
    }
    await act(created.id, 'abort');
  });
});
