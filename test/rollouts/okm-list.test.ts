import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { walkKeys } from '../helpers/cursor-lists.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, recordingEmitter, type SimulatedOkm } from './fleet-helpers.ts';

interface ListedOkm {
  serial_number: string;
  group: number;
  state: string;
  offered_at: string | null;
  last_sync_time: string | null;
  reported_version: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * GET /api/v1/rollouts/{id}/okms (contract §13): a rollout's OKMs by serial number with their state
 * and offer time, the state one of the group counts' (silent: no poll since its group started).
 */
forEachDatabase('a rollout\'s OKM list', (kind) => {
  let t: TestApp;
  let acme: ReturnType<typeof api>;
  let acmeToken: string;
  let globexToken: string;
  let adminToken: string;
  let fleet: SimulatedOkm[];
  let rollout: RolloutView;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    const customer = await createTestCustomer(t, 'acme');
    await createTestCustomer(t, 'globex');
    fleet = await createFleet(t, customer.id, 12, '1.0', 'RL');
    acmeToken = await customerWriter(t, 'acme');
    acme = api(t, acmeToken);
    globexToken = await customerWriter(t, 'globex');
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  const listOkms = (token: string, id: number, query = '') => t.app.inject({ method: 'GET', url: `/api/v1/rollouts/${id}/okms${query}`, headers: { authorization: `Bearer ${token}` } });
  const listed = async (query = '') => {
    const response = await listOkms(acmeToken, rollout.id, query);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as ListedOkm[];
  };
  const groupOf = async (group: number) =>
    (await t.db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', rollout.id).where('group_index', '=', group).orderBy('serial_number').execute()).map((row) => row.serial_number);
  const device = (serial: string) => fleet.find((okm) => okm.serialNumber === serial)!;

  test('each state lists the OKMs its group counts hold, with the offer time; silent: no poll since the group started, a poll before it included', async () => {
    // Polled once before the rollout started: silent once its group has started, until it polls again.
    for (const okm of fleet) await okm.poll(t);
    const created = await acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], update_timeout: '1s', error_threshold: 100 });
    assert.equal(created.statusCode, 201, created.body);
    rollout = created.json().data;
    assert.equal((await acme.act(rollout.id, 'start')).statusCode, 200);
    const [first, second] = [await groupOf(0), await groupOf(1)];
    assert.deepEqual([first.length, second.length], [6, 6]);
    const [updating, refusing, offered, ...silent] = first;
    device(refusing!).refusesUpdates = true;
    device(offered!).refusesUpdates = true;
    const startedAt = Date.now();

    // Updates: offered on one poll, reports the version on the next.
    await device(updating!).poll(t);
    await device(updating!).poll(t);
    // Offered, refuses, and still polls once the timeout has passed: failed at the next sweep.
    await device(refusing!).poll(t);
    await device(offered!).poll(t);

    const view = (await acme.get(rollout.id)).json().data as RolloutView;
    assert.deepEqual(view.groups[0]!.counts, { scheduled: 0, blocked: 0, silent: 3, offered: 2, updated: 1, failed: 0 });
    assert.deepEqual(view.groups[1]!.counts, { scheduled: 6, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 0 }, 'a group that has not started has no silent OKM');
    assert.deepEqual(view.totals, { scheduled: 6, blocked: 0, silent: 3, offered: 2, updated: 1, failed: 0 });
    const byState = async (state: string) => (await listed(`?state=${state}`)).map((okm) => okm.serial_number);
    assert.deepEqual(await byState('silent'), [...silent].sort());
    const [silentOkm] = await listed('?state=silent');
    assert.deepEqual([silentOkm!.state, silentOkm!.offered_at, silentOkm!.group], ['silent', null, 0]);
    assert.ok(Date.parse(silentOkm!.last_sync_time!) < startedAt, 'its last poll, before the group started');
    assert.deepEqual(await listed('?group=1&state=silent'), []);

    // Past the timeout, the sweep fails the offer of the one that still polls and the silent ones (contract §13).
    await sleep(1100);
    await device(refusing!).poll(t);
    await sweepRollouts(t.db, t.dialect, recordingEmitter().emit, Date.now());
    const swept = (await acme.get(rollout.id)).json().data as RolloutView;
    assert.deepEqual(swept.totals, { scheduled: 6, blocked: 0, silent: 0, offered: 1, updated: 1, failed: 4 });
    assert.deepEqual(await byState('silent'), []);
    assert.deepEqual(await byState('updated'), [updating]);
    assert.deepEqual(await byState('failed'), [refusing!, ...silent].sort());
    assert.deepEqual(await byState('offered'), [offered]);
    assert.deepEqual(await byState('scheduled'), second);

    const [offeredOkm] = await listed('?state=offered');
    assert.equal(offeredOkm!.group, 0);
    assert.equal(offeredOkm!.state, 'offered');
    assert.equal(offeredOkm!.reported_version, '1.0');
    assert.ok(Date.parse(offeredOkm!.offered_at!) >= startedAt - 1000 && Date.parse(offeredOkm!.offered_at!) <= Date.now(), offeredOkm!.offered_at!);
    assert.ok(Date.parse(offeredOkm!.last_sync_time!) >= Date.parse(offeredOkm!.offered_at!));

    // Group filter, and the whole list: every member once, by serial number, each with its state.
    assert.deepEqual((await listed('?group=1&state=scheduled')).map((okm) => okm.serial_number), second);
    const all = await listed('?limit=500');
    assert.deepEqual(all.map((okm) => okm.serial_number), [...first, ...second].sort());
    assert.deepEqual(Object.fromEntries(all.map((okm) => [okm.serial_number, okm.state])), {
      ...Object.fromEntries(second.map((serial) => [serial, 'scheduled'])),
      ...Object.fromEntries(silent.map((serial) => [serial, 'failed'])),
      [updating!]: 'updated',
      [refusing!]: 'failed',
      [offered!]: 'offered',
    });

    // An OKM failed for its silence that polls again is offered the version, and is updated once it reports it.
    await device(silent[0]!).poll(t);
    assert.deepEqual(device(silent[0]!).offers, ['2.0']);
    await device(silent[0]!).poll(t);
    assert.deepEqual(await byState('updated'), [updating, silent[0]].sort());
  });

  test('pages walked by cursor hold every OKM once, in serial number order, while OKMs change state between pages', async () => {
    const expected = [...(await groupOf(0)), ...(await groupOf(1))].sort();
    const silentBefore = (await listed('?state=silent')).map((okm) => okm.serial_number);

    const walked = await walkKeys({ t, token: acmeToken, url: `/api/v1/rollouts/${rollout.id}/okms`, keyOf: (okm) => okm.serial_number as string }, 2, async () => {
      // A silent OKM polls and becomes offered: it moves between states, not in the order.
      const next = silentBefore.shift();
      if (next !== undefined) await device(next).poll(t);
    });
    assert.deepEqual(walked, expected);

    for (const limit of [1, 3]) {
      const scheduled = await walkKeys({ t, token: acmeToken, url: `/api/v1/rollouts/${rollout.id}/okms?state=scheduled`, keyOf: (okm) => okm.serial_number as string }, limit);
      assert.deepEqual(scheduled, await groupOf(1));
    }
  });

  test("another customer's rollout is not found, and its OKMs are never listed; an operator lists them", async () => {
    const foreign = await listOkms(globexToken, rollout.id, '?state=scheduled');
    assert.deepEqual([foreign.statusCode, foreign.json().error_msg], [404, `rollout ${rollout.id} not found`]);
    const asAcme = await listOkms(globexToken, rollout.id, '?customer=acme');
    assert.equal(asAcme.statusCode, 403);
    const byAdmin = await listOkms(adminToken, rollout.id, '?limit=500');
    assert.equal(byAdmin.statusCode, 200);
    assert.equal(byAdmin.json().data.length, 12);
    assert.equal((await listOkms(adminToken, 999_999)).statusCode, 404);
  });

  test('a bad parameter is a 400 naming it; without a token a 401 comes first', async () => {
    const refused: [string, string][] = [
      ['?state=late', 'state'],
      ['?state=stuck', 'state'],
      ['?group=-1', 'group'],
      ['?group=2', 'group'],
      ['?group=one', 'group'],
      ['?limit=0', 'limit'],
      ['?cursor=bm90LWpzb24', 'cursor'],
      ['?sort=serial_number', 'sort'],
    ];
    for (const [query, name] of refused) {
      const response = await listOkms(acmeToken, rollout.id, query);
      assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
      assert.match(response.json().error_msg, new RegExp(`(^|\\.)${name}: `), query);
    }
    const anonymous = await t.app.inject({ method: 'GET', url: `/api/v1/rollouts/${rollout.id}/okms?state=late` });
    assert.equal(anonymous.statusCode, 401);
    const badId = await listOkms(acmeToken, 0);
    assert.equal(badId.statusCode, 400);
  });

  test('an aborted rollout says so of each group it had not completed', async () => {
    const before = (await acme.get(rollout.id)).json().data as RolloutView;
    assert.deepEqual(before.groups.map((group) => group.state), ['running', 'waiting']);
    assert.equal((await acme.act(rollout.id, 'pause')).json().data.groups[0].state, 'paused');

    const aborted = (await acme.act(rollout.id, 'abort')).json().data as RolloutView;

    assert.deepEqual(aborted.groups.map((group) => group.state), ['aborted', 'aborted']);
    const listedAfter = (await acme.list()).json().data.find((item: RolloutView) => item.id === rollout.id) as RolloutView;
    assert.deepEqual(listedAfter.groups.map((group) => group.state), ['aborted', 'aborted']);
  });
});
