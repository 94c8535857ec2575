import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assignGroup, withdrawOffers } from '../../src/rollouts/repository.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, pollAll, type SimulatedOkm } from './fleet-helpers.ts';

const CHUNK = 7;

forEachDatabase('a rollout group written in chunks', (kind) => {
  let t: TestApp;
  let writer: ReturnType<typeof api>;
  let customerId: number;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    for (const version of ['1.0', '2.0']) await addRelease(t.db, 'kas', version, { fleetLatest: version === '1.0' });
    customerId = (await createTestCustomer(t, 'acme')).id;
    writer = api(t, await customerWriter(t, 'acme', 'alice'));
  });
  after(() => t.close());

  const act = async (id: number, action: string) => {
    const response = await writer.act(id, action);
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as RolloutView;
  };
  const naming = async (id: number) =>
    (await t.db.selectFrom('okms').select('serial_number').where('rollout_id', '=', id).orderBy('serial_number').execute()).map((row) => row.serial_number);
  const groupOf = async (id: number, group: number) =>
    (await t.db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', id).where('group_index', '=', group).orderBy('serial_number').execute()).map((row) => row.serial_number);
  const offeredDuring = async (fleet: readonly SimulatedOkm[], work: () => Promise<unknown>) => {
    const before = new Map(fleet.map((okm) => [okm.serialNumber, okm.offers.length]));
    await Promise.all([work(), pollAll(t, fleet, 4)]);
    return fleet.filter((okm) => okm.offers.length > before.get(okm.serialNumber)!).map((okm) => okm.serialNumber).sort();
  };

  test('a group of many chunks is fully assigned before it starts; polls meanwhile are offered the version only by the started group, and after the advance by both', async () => {
    const fleet = await createFleet(t, customerId, 120, '1.0', 'CHUNKED');
    for (const okm of fleet) okm.refusesUpdates = true;
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], auto_advance: false, filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    const rollout = created.json().data as RolloutView;
    await act(rollout.id, 'start');
    const [first, second] = [await groupOf(rollout.id, 0), await groupOf(rollout.id, 1)];

    const offeredWhileAssigning = await offeredDuring(fleet, () => assignGroup(t.db, rollout.id, 1, CHUNK));
    const assigned = await naming(rollout.id);
    await act(rollout.id, 'advance');
    const offeredAfterAdvance = await offeredDuring(fleet, async () => {});

    assert.equal(second.length, 60);
    assert.deepEqual(offeredWhileAssigning, first, 'the second group is not offered before it starts, though its rows name the rollout');
    assert.deepEqual(assigned, [...first, ...second].sort(), 'every OKM of both groups, over 9 chunks');
    assert.deepEqual(offeredAfterAdvance, fleet.map((okm) => okm.serialNumber).sort());
    await act(rollout.id, 'abort');
  });

  test('abort stops the offers at once and clears every row in chunks; polls during the clearing are offered nothing', async () => {
    const fleet = await createFleet(t, customerId, 50, '1.0', 'CLEARED');
    for (const okm of fleet) okm.refusesUpdates = true;
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    const rollout = created.json().data as RolloutView;
    await act(rollout.id, 'start');
    await pollAll(t, fleet);

    const aborted = await act(rollout.id, 'abort');
    const afterAbort = await naming(rollout.id);
    // As if an abort had stopped before clearing: the rows name the aborted rollout again.
    await assignGroup(t.db, rollout.id, 0, CHUNK);
    const leftOver = await naming(rollout.id);
    const offeredWhileClearing = await offeredDuring(fleet, () => withdrawOffers(t.db, rollout.id, CHUNK));
    const cleared = await naming(rollout.id);
    await assignGroup(t.db, rollout.id, 0, CHUNK);
    await act(rollout.id, 'abort');

    assert.equal(aborted.state, 'aborted');
    assert.deepEqual(afterAbort, []);
    assert.equal(leftOver.length, 50);
    assert.deepEqual(offeredWhileClearing, []);
    assert.deepEqual(cleared, []);
    assert.deepEqual(await naming(rollout.id), [], 'aborting again finishes a clearing that stopped half-way');
  });
});
