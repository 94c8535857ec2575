import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, recordingEmitter, type SimulatedOkm } from './fleet-helpers.ts';

interface ListedOkm {
  serial_number: string;
  group: number;
  state: string;
  offered_at: string | null;
  last_sync_time: string | null;
  reported_version: string | null;
  blocked_by: string | null;
}

const HOUR = 3_600_000;

/** Polls until the server has nothing more to correct (a device that ignores nothing gets there in a few polls). */
async function settle(t: TestApp, okm: SimulatedOkm): Promise<void> {
  for (let poll = 0; poll < 20; poll++) if (Object.keys(await okm.poll(t)).length === 0) return;
  throw new Error(`${okm.serialNumber} never settled`);
}

/** The device keeps a cache mode the server does not want and never takes the correction: it gets stuck on cacheMode, a resolver before the firmware offers. */
function refuseCacheMode(okm: SimulatedOkm): void {
  okm.parameters.cacheMode = 2;
  okm.ignores.add('cacheMode');
}

/**
 * Blocked members (contract §13, §15): scheduled in a started group, polling, but stuck on a
 * resolver before the rollout's, so its offer is never sent; counted, listed with the resolver,
 * and failed once update_timeout has passed since their group started.
 */
forEachDatabase('blocked rollout members', (kind) => {
  let t: TestApp;
  let acme: ReturnType<typeof api>;
  let customerId: number;
  let fleet: SimulatedOkm[];
  let rollout: RolloutView;
  let startedAt: number;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    await addRelease(t.db, 'batch_key', '2.0');
    customerId = (await createTestCustomer(t, 'acme')).id;
    acme = api(t, await customerWriter(t, 'acme'));
    fleet = await createFleet(t, customerId, 10, '1.0', 'BLK');
    for (const okm of fleet) await settle(t, okm);
  });
  after(() => t.close());

  const view = async (id: number) => {
    const response = await acme.get(id);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as RolloutView;
  };
  const listed = async (query: string) => {
    const response = await t.app.inject({ method: 'GET', url: `/api/v1/rollouts/${rollout.id}/okms${query}`, headers: { authorization: `Bearer ${await customerWriter(t, 'acme')}` } });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as ListedOkm[];
  };
  const stuckOn = async (serial: string) => (await t.db.selectFrom('okms').select('stuck_resolver').where('serial_number', '=', serial).executeTakeFirstOrThrow()).stuck_resolver;
  const serials = (okms: readonly SimulatedOkm[]) => okms.map((okm) => okm.serialNumber).sort();

  test('a member of a started group that polls but is stuck on an earlier resolver is counted blocked, and listed with the resolver that blocks it', async () => {
    const [stuckBefore, ...others] = fleet;
    const blocked = others.slice(0, 2);
    const updating = others.slice(2);
    // Stuck before the rollout started, and no poll since: silent until it polls.
    refuseCacheMode(stuckBefore!);
    for (let poll = 0; poll < 3; poll++) await stuckBefore!.poll(t);
    assert.equal(await stuckOn(stuckBefore!.serialNumber), 'cacheMode');

    const created = await acme.create({ kind: 'batch_key', version: '2.0', groups: [{ percent: 100 }], error_threshold: 20, update_timeout: '1h' });
    assert.equal(created.statusCode, 201, created.body);
    rollout = created.json().data;
    startedAt = Date.now();
    assert.equal((await acme.act(rollout.id, 'start')).statusCode, 200);

    for (const okm of blocked) {
      refuseCacheMode(okm);
      for (let poll = 0; poll < 3; poll++) assert.deepEqual(await okm.poll(t), { cacheMode: 1 }, 'the earlier resolver answers every poll');
      assert.equal(await stuckOn(okm.serialNumber), 'cacheMode');
    }
    for (const okm of updating) {
      await okm.poll(t);
      await okm.poll(t);
    }

    const counted = await view(rollout.id);
    assert.deepEqual(counted.groups[0]!.counts, { scheduled: 0, blocked: 2, silent: 1, offered: 0, updated: 7, failed: 0 });
    assert.deepEqual(counted.totals, counted.groups[0]!.counts);
    assert.equal(counted.groups[0]!.okms, 10);

    const blockedList = await listed('?state=blocked');
    assert.deepEqual(blockedList.map((okm) => okm.serial_number), serials(blocked));
    for (const okm of blockedList) {
      assert.deepEqual([okm.state, okm.blocked_by, okm.group, okm.offered_at, okm.reported_version], ['blocked', 'cacheMode', 0, null, null]);
      assert.ok(Date.parse(okm.last_sync_time!) >= startedAt, 'it polled since its group started');
    }
    assert.deepEqual((await listed('?state=silent')).map((okm) => [okm.serial_number, okm.blocked_by]), [[stuckBefore!.serialNumber, null]], 'stuck, but silent since the group started');
    assert.deepEqual(await listed('?state=scheduled'), []);
    assert.ok((await listed('?state=updated')).every((okm) => okm.blocked_by === null));

    // Once it polls, the OKM stuck before the start is blocked too; the list of rollouts counts the same.
    await stuckBefore!.poll(t);
    const listedRollout = ((await acme.list()).json().data as RolloutView[]).find((item) => item.id === rollout.id)!;
    assert.deepEqual(listedRollout.groups[0]!.counts, { scheduled: 0, blocked: 3, silent: 0, offered: 0, updated: 7, failed: 0 });
    const all = await listed('?limit=500');
    assert.deepEqual(
      all.filter((okm) => okm.state === 'blocked').map((okm) => [okm.serial_number, okm.blocked_by]),
      serials([stuckBefore!, ...blocked]).map((serial) => [serial, 'cacheMode']),
    );
  });

  test('blocked members count as failed once update_timeout has passed since their group started, so the error threshold pauses the rollout', async () => {
    const recorder = recordingEmitter();
    await sweepRollouts(t.db, t.dialect, recorder.emit, startedAt + HOUR / 2);
    const early = await view(rollout.id);
    assert.deepEqual([early.state, early.groups[0]!.counts.blocked, early.groups[0]!.counts.failed], ['running', 3, 0], 'not before update_timeout');
    assert.deepEqual(recorder.events, []);

    await sweepRollouts(t.db, t.dialect, recorder.emit, Date.now() + HOUR + 1000);

    const paused = await view(rollout.id);
    assert.deepEqual([paused.state, paused.state_reason], ['paused', 'error_threshold']);
    assert.deepEqual(paused.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 7, failed: 3 });
    assert.deepEqual(recorder.events, [
      { type: 'rollout.paused', customerId, data: { rollout_id: rollout.id, customer: 'acme', kind: 'batch_key', version: '2.0', reason: 'error_threshold', group: 0, failed: 3 } },
    ]);
    const failed = await listed('?state=failed');
    assert.deepEqual(failed.map((okm) => okm.serial_number), serials(fleet.filter((okm) => okm.ignores.has('cacheMode'))));
    assert.ok(failed.every((okm) => okm.blocked_by === null && okm.state === 'failed'));

    // One that takes the correction after a resume is offered the version and counts as updated once it reports it.
    assert.equal((await acme.act(rollout.id, 'resume')).statusCode, 200);
    const unblocked = fleet.find((okm) => okm.ignores.has('cacheMode'))!;
    unblocked.ignores.delete('cacheMode');
    assert.deepEqual(await unblocked.poll(t), { cacheMode: 1 });
    // The next poll reports the corrected value: no longer stuck, and the offer is sent.
    assert.deepEqual(Object.keys(await unblocked.poll(t)), ['batchKeyFirmware']);
    assert.equal(await stuckOn(unblocked.serialNumber), null);
    await unblocked.poll(t);
    assert.deepEqual((await view(rollout.id)).groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 8, failed: 2 });
    assert.equal((await acme.act(rollout.id, 'abort')).statusCode, 200);
  });
});

/** A rollout's own firmware retry policy (contract §15): stored complete, returned, and followed by its offers. */
forEachDatabase('a rollout’s retry policy', (kind) => {
  let t: TestApp;
  let acme: ReturnType<typeof api>;
  let fleet: SimulatedOkm[];
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    const customerId = (await createTestCustomer(t, 'acme')).id;
    acme = api(t, await customerWriter(t, 'acme'));
    fleet = await createFleet(t, customerId, 4, '1.0', 'RTP');
    for (const okm of fleet) await settle(t, okm);
  });
  after(() => t.close());

  const create = (body: Record<string, unknown>) => acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], ...body });
  const storedPolicy = async (id: number) => (await t.db.selectFrom('rollouts').select('retry_policy').where('id', '=', id).executeTakeFirstOrThrow()).retry_policy;

  test('retry_policy is stored complete (the fleet default fills in what is left out) and returned on the rollout; none is null', async () => {
    const created = await create({ retry_policy: { offers: 2 }, filter: { serial_numbers: [fleet[0]!.serialNumber] } });
    assert.equal(created.statusCode, 201, created.body);
    const rollout = created.json().data as RolloutView;
    const complete = { offers: 2, backoff_polls: [1, 2, 4, 8], max_backoff_polls: 32 };
    assert.deepEqual(rollout.retry_policy, complete);
    assert.deepEqual(JSON.parse((await storedPolicy(rollout.id))!), complete);
    assert.deepEqual((await acme.get(rollout.id)).json().data.retry_policy, complete);
    assert.deepEqual(((await acme.list()).json().data as RolloutView[]).find((item) => item.id === rollout.id)!.retry_policy, complete);

    const full = { offers: 0, backoff_polls: [3], max_backoff_polls: 5 };
    const withFull = await create({ retry_policy: full, filter: { serial_numbers: [fleet[1]!.serialNumber] } });
    assert.deepEqual(withFull.json().data.retry_policy, full);
    const without = await create({ filter: { serial_numbers: [fleet[2]!.serialNumber] } });
    assert.equal(without.json().data.retry_policy, null);
    assert.equal(await storedPolicy(without.json().data.id), null);
    for (const id of [rollout.id, withFull.json().data.id, without.json().data.id]) assert.equal((await acme.act(id, 'abort')).statusCode, 200);
  });

  test('a bad retry_policy is a 400 naming the field, and creates nothing', async () => {
    const before = await t.db.selectFrom('rollouts').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
    const cases: [unknown, string][] = [
      [{ offers: -1 }, 'retry_policy.offers: must be >= 0'],
      [{ offers: 1.5 }, 'retry_policy.offers: must be integer'],
      [{ backoff_polls: [1] }, 'retry_policy.offers: required'],
      [{ offers: 3, backoff_polls: [] }, 'retry_policy.backoff_polls: must NOT have fewer than 1 items'],
      [{ offers: 3, backoff_polls: [0] }, 'retry_policy.backoff_polls[0]: must be >= 1'],
      [{ offers: 3, max_backoff_polls: 'lots' }, 'retry_policy.max_backoff_polls: must be integer'],
      [{ offers: 3, colour: 'red' }, 'retry_policy.colour: unknown field'],
      ['3', 'retry_policy: must be object'],
    ];
    for (const [policy, message] of cases) {
      const response = await create({ retry_policy: policy });
      assert.deepEqual([response.statusCode, response.json().error_msg], [400, message], JSON.stringify(policy));
    }
    const afterwards = await t.db.selectFrom('rollouts').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(afterwards.n), Number(before.n));
  });

  test("the rollout's offers follow its own policy; a rollout without one, the fleet default", async () => {
    const [own, fleetDefault] = [fleet[3]!, fleet[0]!];
    const withPolicy = (await create({ retry_policy: { offers: 1, backoff_polls: [2] }, filter: { serial_numbers: [own.serialNumber] } })).json().data as RolloutView;
    const withoutPolicy = (await create({ filter: { serial_numbers: [fleetDefault.serialNumber] } })).json().data as RolloutView;
    for (const id of [withPolicy.id, withoutPolicy.id]) assert.equal((await acme.act(id, 'start')).statusCode, 200);

    const offeredOnEachPoll = async (okm: SimulatedOkm) => {
      okm.refusesUpdates = true;
      const offered: boolean[] = [];
      for (let poll = 0; poll < 4; poll++) offered.push('kasFirmware' in (await okm.poll(t)));
      return offered;
    };
    // One offer, then held back for 2 polls, then offered again; the fleet default offers 3 times before it holds back.
    assert.deepEqual(await offeredOnEachPoll(own), [true, false, false, true]);
    assert.deepEqual(await offeredOnEachPoll(fleetDefault), [true, true, true, false]);
    for (const id of [withPolicy.id, withoutPolicy.id]) assert.equal((await acme.act(id, 'abort')).statusCode, 200);
  });
});
