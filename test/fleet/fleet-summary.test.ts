import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, createOkm, runFleetPass, uniqueSerial } from '../okm/admin-helpers.ts';
import { freezeServerClock, poll, SERVER_TIME } from '../device/config-helpers.ts';

const SUMMARY = '/api/v1/fleet/summary';
const EMPTY_OKMS = { total: 0, in_step: 0, drifting: 0, overdue: 0, never_polled: 0, stuck: 0 };

forEachDatabase('fleet summary', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  let customers = 0;
  /** A customer of its own for each test, so that counts do not mix, and its okm:read token. */
  async function newCustomer() {
    const name = `fleet-${++customers}`;
    return { name, token: await issueTestToken(t, { customer: name, scopes: ['okm:read', 'okm:write'] }) };
  }
  const summary = (token: string, query = '') => call(t, 'GET', `${SUMMARY}${query}`, { token });
  const inStep = (extra: Record<string, string | number> = {}) => ({
    kasDateTime: Date.now(),
    cacheMode: 1,
    auditUrl: t.settings.auditUrl,
    pollingInterval: t.settings.fleetPollingInterval,
    ...extra,
  });

  /**
   * Four OKMs: never polled, in step (KAS 2.0.0, batch key 1.1), two drifting (kasDateTime,
   * pollingInterval; KAS 2.1.0 and 2.0.0); then a fleet pass counts them (the summary is its snapshot).
   */
  async function seedFleet(token: string) {
    const [neverPolled, inStepOkm, clockOff, intervalOff] = [uniqueSerial(), uniqueSerial(), uniqueSerial(), uniqueSerial()];
    for (const serial of [neverPolled, inStepOkm, clockOff, intervalOff]) await createOkm(t, token, serial);
    await poll(t, inStepOkm, inStep({ kasFirmware: '2.0.0', batchKeyFirmware: '1.1' }));
    await poll(t, clockOff, inStep({ kasFirmware: '2.1.0', kasDateTime: SERVER_TIME - 3_600_000 }));
    await poll(t, intervalOff, inStep({ kasFirmware: '2.0.0', pollingInterval: 999 }));
    await runFleetPass(t);
  }

  test("a customer's summary counts its OKMs by state, its corrections by reply key and its firmware versions, newest first", async () => {
    const acme = await newCustomer();
    await seedFleet(acme.token);

    const response = await summary(acme.token);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().data, {
      okms: { total: 4, in_step: 1, drifting: 2, overdue: 0, never_polled: 1, stuck: 0 },
      corrections: { kasDateTime: 1, pollingInterval: 1 },
      firmware: {
        kas: [
          { version: '2.1.0', okms: 1 },
          { version: '2.0.0', okms: 2 },
        ],
        batch_key: [{ version: '1.1', okms: 1 }],
        wireless_key: [],
      },
    });
  });

  test('OKMs that have not polled for 3 intervals are counted overdue, whether in step or drifting, once a fleet pass has found them', async () => {
    const acme = await newCustomer();
    await seedFleet(acme.token);
    const dueAt = SERVER_TIME + 3 * t.settings.fleetPollingInterval * 1000;

    await runFleetPass(t, dueAt);
    const atDueTime = (await summary(acme.token)).json().data.okms;
    await runFleetPass(t, dueAt + 1);
    const pastIt = (await summary(acme.token)).json().data.okms;

    assert.deepEqual(atDueTime, { total: 4, in_step: 1, drifting: 2, overdue: 0, never_polled: 1, stuck: 0 });
    assert.deepEqual(pastIt, { total: 4, in_step: 1, drifting: 2, overdue: 3, never_polled: 1, stuck: 0 });
  });

  test("another customer sees nothing of it, and may not ask for it by name", async () => {
    const acme = await newCustomer();
    const beta = await newCustomer();
    await seedFleet(acme.token);

    const own = (await summary(beta.token)).json().data;
    const named = await summary(beta.token, `?customer=${acme.name}`);

    assert.deepEqual(own, { okms: EMPTY_OKMS, corrections: {}, firmware: { kas: [], batch_key: [], wireless_key: [] } });
    assert.equal(named.statusCode, 403);
  });

  test('an admin sees every OKM and the pending count, or one customer with ?customer=', async () => {
    const acme = await newCustomer();
    await seedFleet(acme.token);
    const admin = await issueTestToken(t, { scopes: ['admin'] });
    const mine = (await summary(acme.token)).json().data;

    const all = (await summary(admin)).json().data;
    const one = (await summary(admin, `?customer=${acme.name}`)).json().data;

    assert.equal(typeof all.pending, 'number');
    assert.ok(all.okms.total >= mine.okms.total);
    assert.deepEqual(one, { ...mine, pending: all.pending });
    assert.equal((await summary(admin, '?customer=nobody-here')).statusCode, 400);
  });

  test('the summary needs okm:read and a valid query', async () => {
    const acme = await newCustomer();
    const aclOnly = await issueTestToken(t, { customer: acme.name, scopes: ['acl:read'] });

    assert.equal((await call(t, 'GET', SUMMARY)).statusCode, 401);
    assert.equal((await summary(aclOnly)).statusCode, 403);
    assert.equal((await summary(acme.token, '?customer=bad%20name')).statusCode, 400);
    assert.equal((await summary(acme.token, '?other=1')).statusCode, 400);
  });
});
