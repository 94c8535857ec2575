import assert from 'node:assert/strict';
import { after, before, beforeEach, mock, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { walkKeys } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, createOkm, runFleetPass, uniqueSerial } from './admin-helpers.ts';
import { addRelease, freezeServerClock, poll, SERVER_TIME, type DeviceParameters } from '../device/config-helpers.ts';

const SUMMARY = '/api/v1/fleet/summary';
/** Between one poll and the next: the fleet's default polling interval. */
const POLL_GAP_MS = 150_000;

/**
 * contract §15, the admin API's side: the OKM record's `stuck`, `GET /api/v1/okms?state=stuck`
 * and the fleet summary's `okms.stuck`. The OKMs are made stuck the way devices make them so:
 * polls that keep reporting a value they were told to change.
 */
forEachDatabase('stuck OKMs in the admin API', (kind) => {
  let t: TestApp;
  let admin: string;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());
  // Each test's polls move the clock on; its tokens were issued at the server time.
  beforeEach(() => mock.timers.setTime(SERVER_TIME));

  let customers = 0;
  /** A customer of its own for each test, so that lists and counts hold only that test's OKMs, and its token. */
  async function newCustomer() {
    const name = `stuck-${++customers}`;
    return { name, token: await issueTestToken(t, { customer: name, scopes: ['okm:read', 'okm:write'] }) };
  }

  /** What an unconfigured OKM's device reports when nothing needs correcting. */
  const inStep = (extra: DeviceParameters = {}) => ({
    kasDateTime: Date.now(),
    cacheMode: 1,
    auditUrl: t.settings.auditUrl,
    pollingInterval: t.settings.fleetPollingInterval,
    ...extra,
  });
  /** A device that keeps polling every 300 s whatever it is told (the desired interval is the fleet's 150 s). */
  const ignoresItsInterval = () => inStep({ pollingInterval: 300 });

  /** One poll, an interval after the previous one. */
  async function pollLater(serial: string, parameters: DeviceParameters) {
    mock.timers.tick(POLL_GAP_MS);
    const response = await poll(t, serial, parameters);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Record<string, unknown>;
  }

  /** An OKM of the token's customer, sent pollingInterval on `polls` polls in a row without effect. */
  async function okmSentIntervalOn(token: string, polls: number, prefix = 'STK') {
    const serial = uniqueSerial(prefix);
    await createOkm(t, token, serial);
    for (let round = 0; round < polls; round++) await pollLater(serial, ignoresItsInterval());
    return serial;
  }
  const stuckOkm = (token: string, prefix?: string) => okmSentIntervalOn(token, t.settings.stuckAfterPolls, prefix);

  const record = async (serial: string, token: string) => {
    const response = await call(t, 'GET', `${OKMS}/${serial}`, { token });
    assert.equal(response.statusCode, 200, response.body);
    return response.json().data;
  };
  const serialsOf = (response: { json(): { data: { serial_number: string }[] } }) => response.json().data.map((okm) => okm.serial_number);
  const listStuck = async (token: string, query = '') => (await walkKeys({ t, token, url: `${OKMS}?state=stuck${query}`, keyOf: (okm) => okm.serial_number as string }, 1)).map(String);

  test('an OKM sent one correction on 3 polls in a row without effect shows stuck: the resolver, since that poll, and the polls, counted on by each poll', async () => {
    const { token } = await newCustomer();
    const serial = await okmSentIntervalOn(token, 2);
    assert.equal((await record(serial, token)).stuck, null, 'two polls: not yet');

    await pollLater(serial, ignoresItsInterval());
    const becameStuckAt = Date.now();
    assert.deepEqual((await record(serial, token)).stuck, { resolver: 'pollingInterval', since: becameStuckAt, polls: 3 });

    await pollLater(serial, ignoresItsInterval());
    await pollLater(serial, ignoresItsInterval());
    const stuck = await record(serial, token);
    assert.deepEqual(stuck.stuck, { resolver: 'pollingInterval', since: becameStuckAt, polls: 5 });
    assert.equal(stuck.last_correction, 'pollingInterval');

    // It reports the interval it was sent: no longer stuck.
    await pollLater(serial, inStep());
    const taken = await record(serial, token);
    assert.equal(taken.stuck, null);
    assert.equal(taken.last_correction, null);
  });

  test('every answer that carries the OKM record carries stuck: the list, PUT and PATCH', async () => {
    const { token } = await newCustomer();
    const serial = await stuckOkm(token);
    const expected = (await record(serial, token)).stuck;
    assert.equal(expected.resolver, 'pollingInterval');

    const listed = (await call(t, 'GET', `${OKMS}?serial_prefix=${serial}`, { token })).json().data;
    const patched = await call(t, 'PATCH', `${OKMS}/${serial}`, { token, payload: { auditing_enabled: true } });
    const replaced = await call(t, 'PUT', `${OKMS}/${serial}`, { token, payload: { auditing_enabled: true } });

    assert.deepEqual(
      listed.map((okm: { stuck: unknown }) => okm.stuck),
      [expected],
    );
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().data.stuck, expected);
    assert.equal(replaced.statusCode, 200, replaced.body);
    assert.deepEqual(replaced.json().data.stuck, expected);
  });

  test('stuck is a read-only field: a body that sets it is refused with 400 naming it', async () => {
    const { token } = await newCustomer();
    const serial = await okmSentIntervalOn(token, 0);

    for (const method of ['PUT', 'PATCH'] as const) {
      const response = await call(t, method, `${OKMS}/${serial}`, { token, payload: { stuck: null } });
      assert.equal(response.statusCode, 400, method);
      assert.match(response.json().error_msg, /stuck/, method);
    }
  });

  test("stuck is as of the OKM's last poll: a changed desired value ends it on the next poll, which reports it taken", async () => {
    const { token } = await newCustomer();
    const serial = await stuckOkm(token);

    const patched = await call(t, 'PATCH', `${OKMS}/${serial}`, { token, payload: { polling_interval: 300 } });
    assert.equal(patched.json().data.stuck?.resolver, 'pollingInterval');

    assert.deepEqual(await pollLater(serial, ignoresItsInterval()), {});
    assert.equal((await record(serial, token)).stuck, null);
  });

  test('state=stuck lists the stuck OKMs by serial number, paged by cursor; they are drifting as well, and the filter combines with the others', async () => {
    const { name, token } = await newCustomer();
    const stuck = [await stuckOkm(token, 'STL'), await stuckOkm(token, 'STL'), await stuckOkm(token, 'STL')].sort();
    const drifting = await okmSentIntervalOn(token, t.settings.stuckAfterPolls - 1, 'STL');
    const steady = uniqueSerial('STL');
    await createOkm(t, token, steady);
    await pollLater(steady, inStep());
    await createOkm(t, token, uniqueSerial('STL'));

    assert.deepEqual(await listStuck(token), stuck);
    assert.deepEqual(await listStuck(admin, `&customer=${name}`), stuck);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?state=drifting`, { token })), [...stuck, drifting].sort());
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?state=stuck&serial_prefix=${stuck[1]}`, { token })), [stuck[1]]);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?state=stuck&last_correction=kasDateTime`, { token })), []);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?state=stuck&overdue=false`, { token })), stuck);
  });

  test("a customer token never sees another customer's stuck OKMs, in the list or in the summary's count; an operator sees each customer's", async () => {
    const acme = await newCustomer();
    const beta = await newCustomer();
    const acmeStuck = [await stuckOkm(acme.token), await stuckOkm(acme.token)].sort();
    const betaStuck = [await stuckOkm(beta.token)];
    await runFleetPass(t);

    assert.deepEqual(await listStuck(acme.token), acmeStuck);
    assert.deepEqual(await listStuck(beta.token), betaStuck);
    assert.equal((await call(t, 'GET', `${OKMS}/${betaStuck[0]}`, { token: acme.token })).statusCode, 404);
    assert.equal((await call(t, 'GET', `${OKMS}?state=stuck&customer=${beta.name}`, { token: acme.token })).statusCode, 403);
    assert.equal((await call(t, 'GET', SUMMARY, { token: acme.token })).json().data.okms.stuck, 2);
    assert.equal((await call(t, 'GET', SUMMARY, { token: beta.token })).json().data.okms.stuck, 1);
    assert.equal((await call(t, 'GET', `${SUMMARY}?customer=${beta.name}`, { token: acme.token })).statusCode, 403);

    const everyStuck = await listStuck(admin);
    assert.deepEqual(
      everyStuck.filter((serial) => [...acmeStuck, ...betaStuck].includes(serial)),
      [...acmeStuck, ...betaStuck].sort(),
    );
    assert.equal((await call(t, 'GET', `${SUMMARY}?customer=${beta.name}`, { token: admin })).json().data.okms.stuck, 1);
    assert.ok((await call(t, 'GET', SUMMARY, { token: admin })).json().data.okms.stuck >= 3);
  });

  test("the summary's stuck is the last fleet pass's count: none until a pass has read the stuck OKMs, then as many as state=stuck lists", async () => {
    const { token } = await newCustomer();
    await runFleetPass(t);
    const stuck = [await stuckOkm(token), await stuckOkm(token)];
    await okmSentIntervalOn(token, 1);
    const summary = async () => (await call(t, 'GET', SUMMARY, { token })).json().data.okms;

    assert.equal((await summary()).stuck, 0, 'before a pass');
    await runFleetPass(t);
    // Overdue aside: the first OKM's last poll is more than 3 intervals before the others'.
    const { overdue: _overdue, ...counts } = await summary();
    assert.deepEqual(counts, { total: 3, in_step: 0, drifting: 3, never_polled: 0, stuck: 2 });
    assert.equal((await listStuck(token)).length, stuck.length);
  });

  test('an OKM whose firmware offer the retry policy holds back, answered {} meanwhile, is in step and stuck: listed and counted in both', async () => {
    const { token } = await newCustomer();
    await addRelease(t.db, 'kas', '9.1.0');
    const serial = uniqueSerial('HOLD');
    await createOkm(t, token, serial, { firmware: { kas: '9.1.0' } });
    // Offered on 3 polls (the default policy's offers), not taken: held back on the next.
    for (let round = 0; round < 3; round++) assert.ok('kasFirmware' in (await pollLater(serial, inStep({ kasFirmware: '1.0.0' }))));
    assert.deepEqual(await pollLater(serial, inStep({ kasFirmware: '1.0.0' })), {});
    await runFleetPass(t);

    const held = await record(serial, token);
    assert.equal(held.last_correction, null);
    assert.deepEqual({ resolver: held.stuck?.resolver, polls: held.stuck?.polls }, { resolver: 'kasFirmware', polls: 3 });
    assert.deepEqual(await listStuck(token), [serial]);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?state=in_step`, { token })), [serial]);
    const { okms } = (await call(t, 'GET', SUMMARY, { token })).json().data;
    assert.deepEqual(okms, { total: 1, in_step: 1, drifting: 0, overdue: 0, never_polled: 0, stuck: 1 });
  });
});
