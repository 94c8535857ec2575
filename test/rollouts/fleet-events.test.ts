import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rolloutEventSink } from '../../src/rollouts/events.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import { customerOwner } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTokens } from '../okm/admin-helpers.ts';
import { addRelease } from '../device/config-helpers.ts';
import { createFleetEndpoint, verifiedFleetEvents } from '../webhooks/fleet-event-helpers.ts';
import { FAST_WEBHOOKS, Receiver } from '../webhooks/helpers.ts';
import { api, createFleet, customerWriter, pollAll } from './fleet-helpers.ts';

forEachDatabase('rollout events reach webhook endpoints', (kind) => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, { ...FAST_WEBHOOKS, ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    for (const version of ['1.0', '2.0']) await addRelease(t.db, 'kas', version, { fleetLatest: version === '1.0' });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  test("a rollout that pauses itself at its error threshold is rollout.paused, delivered signed to its customer's endpoint and to no other customer's", async () => {
    const tokens = await issueTokens(t);
    const acme = await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
    const acmeEndpoint = await createFleetEndpoint(t, receiver, tokens.acmeWrite, '/acme-rollouts', ['rollout.paused']);
    const betaEndpoint = await createFleetEndpoint(t, receiver, tokens.betaWrite, '/beta-rollouts', ['rollout.paused']);
    const writer = api(t, await customerWriter(t, 'acme'));
    const fleet = await createFleet(t, acme.id, 20, '1.0', 'PAUSE-HOOK');
    for (const okm of fleet) okm.refusesUpdates = true;
    const created = await writer.create({
      kind: 'kas',
      version: '2.0',
      groups: [{ percent: 50 }, { percent: 100 }],
      update_timeout: '1m',
      filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) },
    });
    assert.equal(created.statusCode, 201, created.body);
    const rollout = created.json().data as RolloutView;
    assert.equal((await writer.act(rollout.id, 'start')).statusCode, 200);
    await pollAll(t, fleet);

    // As if the offers were made over a minute ago (no clock is mocked: the dispatcher and eventually's deadline run on real time).
    await t.db.updateTable('rollout_members').set({ offered_at: Date.now() - 61_000 }).where('rollout_id', '=', rollout.id).where('status', '=', 'offered').execute();
    await pollAll(t, fleet);
    await sweepRollouts(t.db, t.dialect, rolloutEventSink, Date.now());

    const paused = (await writer.get(rollout.id)).json().data as RolloutView;
    assert.equal(paused.state, 'paused');
    assert.equal(paused.state_reason, 'error_threshold');
    const [event] = await eventually(async () => {
      const received = await verifiedFleetEvents(t, receiver, acmeEndpoint.path, customerOwner(acme.id));
      return received.length > 0 && received;
    });
    assert.deepEqual(Object.keys(event!).sort(), ['data', 'id', 'timestamp', 'type']);
    assert.equal(event!.type, 'rollout.paused');
    assert.match(event!.id, /^msg_/);
    assert.ok(!Number.isNaN(Date.parse(event!.timestamp)), event!.timestamp);
    assert.deepEqual(event!.data, { rollout_id: rollout.id, customer: 'acme', kind: 'kas', version: '2.0', reason: 'error_threshold', group: 0, failed: 10 });
    assert.equal(receiver.eventsAt(acmeEndpoint.path).length, 1);
    // The dispatcher has delivered acme's event: nothing was queued or sent for beta.
    assert.equal(receiver.eventsAt(betaEndpoint.path).length, 0);
    const betaRows = await t.db.selectFrom('fleet_event_deliveries').select('id').where('endpoint_id', '=', betaEndpoint.id).execute();
    assert.equal(betaRows.length, 0);
    assert.equal((await writer.act(rollout.id, 'abort')).statusCode, 200);
  });

  test("aborting a running rollout is one rollout.aborted, delivered signed to its customer's endpoint; aborting it again emits nothing more", async () => {
    const tokens = await issueTokens(t);
    const acme = await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
    const abortedEndpoint = await createFleetEndpoint(t, receiver, tokens.acmeWrite, '/acme-aborted', ['rollout.aborted']);
    const writer = api(t, await customerWriter(t, 'acme'));
    const fleet = await createFleet(t, acme.id, 10, '1.0', 'ABORT-HOOK');
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: fleet.map((okm) => okm.serialNumber) } });
    const rollout = created.json().data as RolloutView;
    assert.equal((await writer.act(rollout.id, 'start')).statusCode, 200);
    await pollAll(t, fleet);

    const first = await writer.act(rollout.id, 'abort');
    const again = await writer.act(rollout.id, 'abort');

    assert.deepEqual([first.statusCode, again.statusCode], [200, 200]);
    assert.equal((again.json().data as RolloutView).state, 'aborted');
    const queued = await t.db.selectFrom('fleet_event_deliveries').select('event_type').where('endpoint_id', '=', abortedEndpoint.id).execute();
    assert.deepEqual(queued, [{ event_type: 'rollout.aborted' }]);
    const [event] = await eventually(async () => {
      const received = await verifiedFleetEvents(t, receiver, abortedEndpoint.path, customerOwner(acme.id));
      return received.length > 0 && received;
    });
    assert.equal(event!.type, 'rollout.aborted');
    assert.deepEqual(event!.data, { rollout_id: rollout.id, customer: 'acme', kind: 'kas', version: '2.0', reason: 'operator' });
    assert.equal(receiver.eventsAt(abortedEndpoint.path).length, 1);
  });
});
