import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setCustomerRetryPolicy } from '../../src/customers/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { customerOwner } from '../../src/webhooks/secrets.ts';
import { FAST_WEBHOOKS, Receiver } from '../webhooks/helpers.ts';
import { createFleetEndpoint, verifiedFleetEvents } from '../webhooks/fleet-event-helpers.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { addRelease, poll, type DeviceParameters } from './config-helpers.ts';

/** What an unconfigured OKM's device reports when nothing needs correcting (KAS 2.10.0 is the fleet's latest). */
const inStep = (t: TestApp): DeviceParameters => ({ kasFirmware: '2.10.0', kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });

/** A device that refuses KAS firmware, whose clock is 10 minutes off and whose cache mode is wrong. */
const refuser = (t: TestApp): DeviceParameters => ({ ...inStep(t), kasFirmware: '2.9.9', kasDateTime: Date.now() - 600_000, cacheMode: 2 });

/** The reply keys of `count` polls of a device sending the same query each time (it takes no correction). */
async function answersTo(t: TestApp, serial: string, parameters: () => DeviceParameters, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let index = 0; index < count; index++) {
    const response = await poll(t, serial, parameters());
    assert.equal(response.statusCode, 200, response.body);
    keys.push(Object.keys(response.json())[0] ?? '{}');
  }
  return keys;
}

const okmRow = (t: TestApp, serial: string) => t.db.selectFrom('okms').selectAll().where('serial_number', '=', serial).executeTakeFirstOrThrow();

forEachDatabase('stuck OKMs and the firmware retry policy', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, FAST_WEBHOOKS);
    tokens = await issueTokens(t);
    await addRelease(t.db, 'kas', '2.10.0', { fleetLatest: true });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  /** A new OKM of acme that has enrolled (its first poll). */
  async function enrolledOkm(prefix: string): Promise<string> {
    const serial = uniqueSerial(prefix);
    await createOkm(t, tokens.acmeWrite, serial);
    return serial;
  }

  test('an OKM sent one correction on 3 polls in a row is stuck from the third, okm.stuck then okm.unstuck reach the customer\'s endpoint once it takes it', async () => {
    const endpoint = await createFleetEndpoint(t, receiver, tokens.acmeWrite, '/stuck', ['okm.stuck', 'okm.unstuck']);
    const serial = await enrolledOkm('STUCK');
    const ignoring = () => ({ ...inStep(t), pollingInterval: 300 });

    assert.deepEqual(await answersTo(t, serial, ignoring, 2), ['pollingInterval', 'pollingInterval']);
    assert.equal((await okmRow(t, serial)).stuck_resolver, null);
    await answersTo(t, serial, ignoring, 1);
    const stuck = await okmRow(t, serial);
    assert.equal(stuck.stuck_resolver, 'pollingInterval');
    assert.deepEqual(await answersTo(t, serial, () => inStep(t), 1), ['{}']);
    assert.equal((await okmRow(t, serial)).stuck_resolver, null);

    const owner = customerOwner((await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id);
    const events = await eventually(async () => {
      const received = (await verifiedFleetEvents(t, receiver, endpoint.path, owner)).filter((event) => (event.data as { serial_number: string }).serial_number === serial);
      return received.length === 2 && received;
    });
    assert.deepEqual(
      events.map(({ type, data }) => ({ type, data })),
      [
        { type: 'okm.stuck', data: { serial_number: serial, resolver: 'pollingInterval', since: new Date(Number(stuck.stuck_since)).toISOString(), polls: 3, at: (events[0]!.data as { at: string }).at } },
        { type: 'okm.unstuck', data: { serial_number: serial, resolver: 'pollingInterval', since: new Date(Number(stuck.stuck_since)).toISOString(), polls: 3, at: (events[1]!.data as { at: string }).at } },
      ],
    );
  });

  test('the drift report of a stuck OKM expects its correction again on the next poll, not taken as applied', async () => {
    const serial = await enrolledOkm('STUCK-DRIFT');
    await answersTo(t, serial, () => ({ ...inStep(t), pollingInterval: 300 }), 2);
    const notYet = (await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.acmeRead })).json().data;
    await answersTo(t, serial, () => ({ ...inStep(t), pollingInterval: 300 }), 1);

    const stuck = (await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.acmeRead })).json().data;

    const verdictOf = (report: { resolvers: { name: string; verdict: string }[] }) => report.resolvers.find((resolver) => resolver.name === 'pollingInterval')!.verdict;
    assert.equal(verdictOf(notYet), 'sent');
    assert.equal(verdictOf(stuck), 'next');
    assert.deepEqual(stuck.expected_next, { pollingInterval: t.settings.fleetPollingInterval });
  });

  test('a stuck OKM\'s further polls leave its okms row as it was', async () => {
    const serial = await enrolledOkm('STUCK-STEADY');
    await answersTo(t, serial, () => ({ ...inStep(t), pollingInterval: 300 }), 3);
    const before = await okmRow(t, serial);

    await answersTo(t, serial, () => ({ ...inStep(t), pollingInterval: 300 }), 3);

    assert.deepEqual(await okmRow(t, serial), before);
  });

  test('by default a refused KAS offer is made 3 times, then held back for 1 poll, then 2: meanwhile the clock and the cache mode are corrected', async () => {
    const serial = await enrolledOkm('REFUSER');
    let parameters = refuser(t);

    const keys: string[] = [];
    for (let index = 0; index < 9; index++) {
      const response = await poll(t, serial, parameters);
      const answer = response.json() as Record<string, unknown>;
      keys.push(Object.keys(answer)[0] ?? '{}');
      // It takes everything but firmware.
      if ('kasDateTime' in answer) parameters = { ...parameters, kasDateTime: Date.now() };
      if ('cacheMode' in answer) parameters = { ...parameters, cacheMode: answer.cacheMode as number };
    }

    assert.deepEqual(keys, ['kasFirmware', 'kasFirmware', 'kasFirmware', 'kasDateTime', 'kasFirmware', 'kasFirmware', 'kasFirmware', 'cacheMode', '{}']);
    const row = await okmRow(t, serial);
    assert.equal(row.stuck_resolver, 'kasFirmware');
    assert.deepEqual(JSON.parse(row.offer_hold!).map(({ resolver, rounds, offered }: { resolver: string; rounds: number; offered: number }) => ({ resolver, rounds, offered })), [
      { resolver: 'kasFirmware', rounds: 2, offered: 6 },
    ]);
  });

  test('the drift report tells a held-back offer from the correction the next poll sends', async () => {
    const serial = await enrolledOkm('HELD-DRIFT');
    await answersTo(t, serial, () => refuser(t), 3);

    const report = (await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.acmeRead })).json().data;

    const verdicts = Object.fromEntries(report.resolvers.map((resolver: { name: string; verdict: string }) => [resolver.name, resolver.verdict]));
    assert.equal(verdicts.kasFirmware, 'held_back');
    assert.equal(verdicts.kasDateTime, 'next');
    assert.deepEqual(Object.keys(report.next), ['kasDateTime']);
    assert.deepEqual(Object.keys(report.expected_next), ['kasDateTime']);
    assert.deepEqual(await answersTo(t, serial, () => refuser(t), 1), ['kasDateTime']);
  });

  test('a customer\'s own policy takes precedence over the fleet default: {"offers": 0} offers on every poll', async () => {
    const serial = await enrolledOkm('STRICT');
    await setCustomerRetryPolicy(t.db, 'acme', { offers: 0, backoffPolls: [1], maxBackoffPolls: 1 });
    try {
      assert.deepEqual(await answersTo(t, serial, () => refuser(t), 6), Array(6).fill('kasFirmware'));
    } finally {
      await setCustomerRetryPolicy(t.db, 'acme', null);
    }
    // Back on the default, its 7th offer in a row ends a round: the next poll is held back.
    assert.deepEqual(await answersTo(t, serial, () => refuser(t), 2), ['kasFirmware', 'kasDateTime']);
  });
});

forEachDatabase('the fleet default retry policy', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind, { FIRMWARE_RETRY_POLICY: '{"offers": 0}' });
    await addRelease(t.db, 'kas', '2.10.0', { fleetLatest: true });
  });
  after(() => t.close());

  test('FIRMWARE_RETRY_POLICY={"offers": 0} restores strict seed order (contract §15.2)', async () => {
    const serial = uniqueSerial('FLEET-STRICT');
    await poll(t, serial, refuser(t));

    assert.deepEqual(await answersTo(t, serial, () => refuser(t), 8), Array(8).fill('kasFirmware'));
  });
});
