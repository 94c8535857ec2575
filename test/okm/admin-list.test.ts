import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { poll } from '../device/config-helpers.ts';
import { OKMS, call, createOkm, devicePoll, issueTokens, setLastPoll, uniqueSerial, type Tokens } from './admin-helpers.ts';

let customers = 0;

forEachDatabase('OKM admin API list', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  /** A token of a customer of its own, so that the test knows every OKM the customer has. */
  async function freshCustomer() {
    const name = `list-${++customers}`;
    return { name, token: await issueTestToken(t, { customer: name, scopes: ['okm:read', 'okm:write'] }) };
  }

  async function createMany(token: string, count: number, prefix: string) {
    const serials = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
    for (const serial of [...serials].reverse()) await createOkm(t, token, serial);
    return serials;
  }

  const list = (token: string, query = '') => call(t, 'GET', `${OKMS}${query}`, { token });
  const serialsOf = (response: { json(): { data: { serial_number: string }[] } }) =>
    response.json().data.map((okm) => okm.serial_number);

  test('the list holds the acting customer\'s OKMs ordered by serial number, 50 a page by default, the next page after its cursor', async () => {
    const { token } = await freshCustomer();
    const serials = await createMany(token, 55, uniqueSerial('L'));

    const first = await list(token);
    const second = await list(token, `?cursor=${first.json().next_cursor}`);

    assert.equal(first.statusCode, 200);
    assert.equal(first.json().message, 'Resource fetched successfully');
    assert.deepEqual(serialsOf(first), serials.slice(0, 50));
    assert.equal(first.headers.link, `<${OKMS}?cursor=${first.json().next_cursor}>; rel="next"`);
    assert.deepEqual(serialsOf(second), serials.slice(50));
    assert.equal(second.json().next_cursor, null);
    assert.equal(second.headers.link, undefined);
    assert.equal(first.json().pagination, undefined);
  });

  test('a customer without OKMs gets one empty page', async () => {
    const { token } = await freshCustomer();

    const response = await list(token);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { message: 'Resource fetched successfully', data: [], next_cursor: null });
  });

  test('limit 1 gives one OKM a page; the Link of a filtered list keeps its filters', async () => {
    const { token } = await freshCustomer();
    const serials = await createMany(token, 3, uniqueSerial('L'));

    const first = await list(token, '?state=never_polled&limit=1');
    const second = await list(token, `?state=never_polled&limit=1&cursor=${first.json().next_cursor}`);

    assert.deepEqual(serialsOf(first), [serials[0]]);
    assert.deepEqual(serialsOf(second), [serials[1]]);
    assert.equal(first.headers.link, `<${OKMS}?state=never_polled&limit=1&cursor=${first.json().next_cursor}>; rel="next"`);
  });

  test('limit 500 is accepted', async () => {
    const { token } = await freshCustomer();
    await createMany(token, 2, uniqueSerial('L'));

    const response = await list(token, '?limit=500');

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().data.length, 2);
  });

  test('limit 0 or 501, a cursor of nothing, page, results_per_page, sort and non-numbers are refused with 400 naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['?limit=0', /^querystring\.limit: must be >= 1$/],
      ['?limit=501', /^querystring\.limit: must be <= 500$/],
      ['?limit=two', /^querystring\.limit: must be integer$/],
      ['?limit=1.5', /^querystring\.limit: must be integer$/],
      ['?cursor=Zm9v', /^cursor: not a cursor of this list/],
      ['?page=2', /^page: unknown field$/],
      ['?results_per_page=10', /^results_per_page: unknown field$/],
      ['?sort=last_sync_time', /^sort: unknown field$/],
      ['?overdue=maybe', /^querystring\.overdue: must be boolean$/],
      ['?colour=red', /^colour: unknown field$/],
    ];

    for (const [query, message] of cases) {
      const response = await list(tokens.acmeRead, query);

      assert.equal(response.statusCode, 400, query);
      assert.match(response.json().error_msg, message, query);
    }
  });

  test('firmware_version lists the OKMs that last reported that version', async () => {
    const { token } = await freshCustomer();
    const [current, old, silent] = await createMany(token, 3, uniqueSerial('L'));
    await devicePoll(t, current!, '?kasFirmware=2.10.0');
    await devicePoll(t, old!, '?kasFirmware=2.9.9');

    const response = await list(token, '?firmware_version=2.10.0');

    assert.deepEqual(serialsOf(response), [current]);
    assert.ok(silent);
  });

  test('an OKM that reports a new firmware version moves from the list of its old version to that of the new one', async () => {
    const { token } = await freshCustomer();
    const [current, updating] = await createMany(token, 2, uniqueSerial('L'));
    await devicePoll(t, current!, '?kasFirmware=2.10.0');
    await devicePoll(t, updating!, '?kasFirmware=2.9.9');

    await devicePoll(t, updating!, '?kasFirmware=2.10.0');

    const [newer, older] = [await list(token, '?firmware_version=2.10.0'), await list(token, '?firmware_version=2.9.9')];
    assert.deepEqual(serialsOf(newer), [current, updating].sort());
    assert.deepEqual(serialsOf(older), []);
  });

  test('an OKM is in the never-polled list until it polls, then in the in-step or the drifting list by its last answer, and moves when the answer changes', async () => {
    const { token } = await freshCustomer();
    const [settled, corrected] = await createMany(token, 2, uniqueSerial('ST'));
    const inStep = () => ({ kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });
    const inState = async (state: string) => {
      const response = await list(token, `?state=${state}`);
      return serialsOf(response);
    };
    const states = async () => [await inState('in_step'), await inState('drifting'), await inState('never_polled')];
    const before = await states();

    assert.deepEqual((await poll(t, settled!, inStep())).json(), {});
    assert.deepEqual((await poll(t, corrected!, { ...inStep(), pollingInterval: 300 })).json(), { pollingInterval: t.settings.fleetPollingInterval });
    const afterFirstPolls = await states();
    assert.deepEqual((await poll(t, corrected!, inStep())).json(), {});

    assert.deepEqual(before, [[], [], [settled, corrected]]);
    assert.deepEqual(afterFirstPolls, [[settled], [corrected], []]);
    assert.deepEqual(await states(), [[settled, corrected], [], []]);
  });

  test('overdue=true lists the OKMs that missed three polls; overdue=false the others, including never-polled ones', async () => {
    const { token } = await freshCustomer();
    const [late, punctual, never, lateByFleetDefault] = await createMany(token, 4, uniqueSerial('L'));
    await t.db.updateTable('okms').set({ polling_interval: 10 }).where('serial_number', 'in', [late!, punctual!]).execute();
    await setLastPoll(t, late!, 31_000);
    await setLastPoll(t, punctual!, 20_000);
    await setLastPoll(t, lateByFleetDefault!, 3 * t.settings.fleetPollingInterval * 1000 + 5_000);
    // The fleet pass marks the OKMs that stopped polling.
    assert.ok(await t.app.fleetPass.runPass());

    const overdue = await list(token, '?overdue=true');
    const notOverdue = await list(token, '?overdue=false');

    assert.deepEqual(serialsOf(overdue), [late, lateByFleetDefault]);
    assert.deepEqual(serialsOf(notOverdue), [punctual, never]);
    assert.ok(overdue.json().data.every((okm: { overdue: boolean }) => okm.overdue));
  });

  test('filters combine', async () => {
    const { token } = await freshCustomer();
    const [a, b] = await createMany(token, 2, uniqueSerial('L'));
    await devicePoll(t, a!, '?kasFirmware=4.0');
    await devicePoll(t, b!, '?kasFirmware=4.0');
    await setLastPoll(t, b!, 3_600_000);
    assert.ok(await t.app.fleetPass.runPass());

    const response = await list(token, '?firmware_version=4.0&overdue=true');

    assert.deepEqual(serialsOf(response), [b]);
  });

  test('an admin without a customer lists every customer\'s OKMs; with one, only that customer\'s', async () => {
    const first = await freshCustomer();
    const second = await freshCustomer();
    const [ofFirst] = await createMany(first.token, 1, uniqueSerial('L'));
    const [ofSecond] = await createMany(second.token, 1, uniqueSerial('L'));

    const all = await list(tokens.admin, '?limit=500');
    const onlySecond = await list(tokens.admin, `?customer=${second.name}`);

    assert.ok(serialsOf(all).includes(ofFirst!) && serialsOf(all).includes(ofSecond!));
    assert.deepEqual(serialsOf(onlySecond), [ofSecond]);
  });

  test('an admin naming a customer that does not exist gets 400', async () => {
    const response = await list(tokens.admin, '?customer=nobody');

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'customer: unknown customer nobody');
  });

  test('unassigned=true lists, for an admin, only the OKMs that belong to no customer', async () => {
    const unclaimed = uniqueSerial('L');
    await devicePoll(t, unclaimed);
    await createOkm(t, tokens.acmeWrite, uniqueSerial('L'));

    const response = await list(tokens.admin, '?unassigned=true&limit=500');

    assert.equal(response.statusCode, 200);
    assert.ok(serialsOf(response).includes(unclaimed));
    assert.ok(response.json().data.every((okm: { customer: string | null }) => okm.customer === null));
  });

  test('unassigned=true is refused with 403 for a customer token', async () => {
    const response = await list(tokens.acmeRead, '?unassigned=true');

    assert.equal(response.statusCode, 403);
    assert.equal(response.json().error_code, 'UNAUTHORIZED_ACCESS');
  });

  test('unassigned=true together with a customer is refused with 400', async () => {
    const response = await list(tokens.admin, '?unassigned=true&customer=acme');

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'unassigned: cannot be combined with customer');
  });
});
