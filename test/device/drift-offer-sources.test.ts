import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setCustomerRetryPolicy } from '../../src/customers/repository.ts';
import type { DriftReport } from '../../src/device/drift-schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { addRelease, poll, type DeviceParameters } from './config-helpers.ts';

/** A device at KAS 3.0.0 that takes nothing else amiss and never installs the firmware it is offered. */
const refusing = (t: TestApp): DeviceParameters => ({ kasFirmware: '3.0.0', kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });

/**
 * The drift report names what stands behind each firmware offer (a pin, a rollout, the fleet
 * latest), the retry policy in force with its numbers and whose it is, and the poll at which a
 * held-back offer comes again; the OKM's one state to show is stuck whether or not its last poll
 * was answered with a correction (issue 37: a stuck OKM read "fleet latest" and "In step").
 */
forEachDatabase('the drift report: the source of each firmware offer, its retry policy and the next offer', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    tokens = await issueTokens(t);
    await addRelease(t.db, 'kas', '3.1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '3.3.0');
  });
  after(() => t.close());

  const drift = async (serial: string) => {
    const response = await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.acmeRead });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data as DriftReport;
  };
  const rolloutCall = async (path: string, payload?: object) => {
    const response = await call(t, 'POST', `/api/v1/rollouts${path}`, { token: tokens.acmeWrite, ...(payload === undefined ? {} : { payload }) });
    assert.ok(response.statusCode < 300, response.body);
    return response.json().data as { id: number };
  };

  test('an OKM offered 3.3.0 by a finished rollout while the fleet latest is 3.1.0: the rollout is named, the fleet policy given, the held-back offer\'s next poll counted; stuck is its one state, in step or not', async () => {
    const serial = uniqueSerial('SOURCE');
    await createOkm(t, tokens.acmeWrite, serial);
    const { id } = await rolloutCall('', { kind: 'kas', version: '3.3.0', groups: [{ percent: 100 }], filter: { serial_numbers: [serial] } });
    await rolloutCall(`/${id}/start`);
    await rolloutCall(`/${id}/advance`);
    for (let index = 0; index < 3; index++) assert.deepEqual(Object.keys((await poll(t, serial, refusing(t))).json()), ['kasFirmware']);

    const stuck = await drift(serial);
    assert.deepEqual([stuck.state, stuck.summary_state], ['drifting', 'stuck']);
    const last = Date.parse(stuck.last_poll_at!);
    assert.deepEqual(stuck.firmware[0], {
      resolver: 'kasFirmware',
      kind: 'kas',
      version: '3.3.0',
      source: 'rollout',
      pin: null,
      rollout: { id, state: 'finished', version: '3.3.0', offering: true },
      retry_policy: { offers: 3, backoff_polls: [1, 2, 4, 8], max_backoff_polls: 32, from: 'fleet' },
      hold: { rounds: 1, offered: 3, held_back: true, next_offer_poll: 5, polls_until_offer: 2, next_offer_at: new Date(last + 2 * t.settings.fleetPollingInterval * 1000).toISOString() },
    });
    assert.deepEqual(stuck.firmware.slice(1).map((offer) => [offer.resolver, offer.source, offer.version]), [
      ['batchKeyFirmware', 'none', null],
      ['wirelessKeyFirmware', 'none', null],
    ]);

    // The fourth poll: the offer is held back, nothing else is amiss, so it is answered {}: in step, and still stuck.
    assert.deepEqual((await poll(t, serial, refusing(t))).json(), {});
    const held = await drift(serial);
    assert.deepEqual([held.state, held.summary_state, held.firmware[0]!.hold?.held_back, held.firmware[0]!.hold?.polls_until_offer], ['in_step', 'stuck', false, 1]);
    const record = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;
    assert.deepEqual([record.state, record.summary_state], ['in_step', 'stuck']);
    const listed = (await call(t, 'GET', `${OKMS}?state=stuck`, { token: tokens.acmeRead })).json().data as { serial_number: string; summary_state: string }[];
    assert.equal(listed.find((okm) => okm.serial_number === serial)?.summary_state, 'stuck');

    await setCustomerRetryPolicy(t.db, 'acme', { offers: 5, backoffPolls: [2], maxBackoffPolls: 16 });
    assert.deepEqual((await drift(serial)).firmware[0]!.retry_policy, { offers: 5, backoff_polls: [2], max_backoff_polls: 16, from: 'customer' });
    await setCustomerRetryPolicy(t.db, 'acme', null);
  });

  test("an OKM's own pin is named as the source of its offer, whatever the fleet latest; without pin or rollout it is the fleet latest", async () => {
    const [pinned, plain] = [uniqueSerial('PINNED'), uniqueSerial('PLAIN')];
    await createOkm(t, tokens.acmeWrite, pinned, { firmware: { kas: '3.3.0' } });
    await createOkm(t, tokens.acmeWrite, plain);
    await poll(t, pinned, refusing(t));
    await poll(t, plain, refusing(t));

    const [pinnedOffer, plainOffer] = [(await drift(pinned)).firmware[0]!, (await drift(plain)).firmware[0]!];
    assert.deepEqual([pinnedOffer.source, pinnedOffer.version, pinnedOffer.pin, pinnedOffer.rollout, pinnedOffer.hold], ['pin', '3.3.0', '3.3.0', null, null]);
    assert.deepEqual([plainOffer.source, plainOffer.version, plainOffer.pin, plainOffer.rollout], ['fleet_latest', '3.1.0', null, null]);
    const report = await drift(plain);
    assert.deepEqual([report.state, report.summary_state], ['drifting', 'drifting']);
  });
});
