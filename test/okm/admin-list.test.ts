import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { poll } from './config-helpers.ts';
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

  test('the list holds the acting customer\'s OKMs ordered by serial number, 30 a page by default', async () => {
    const { token } = await freshCustomer();
    const serials = await createMany(token, 35, uniqueSerial('L'));

    const first = await list(token);
    const second = await list(token, '?page=2');

    assert.equal(first.statusCode, 200);
    assert.equal(first.json().message, 'Resource fetched successfully');
    assert.deepEqual(first.json().pagination, { page: 1, results_per_page: '30', total_results: '35' });
    assert.deepEqual(serialsOf(first), serials.slice(0, 30));
    assert.deepEqual(second.json().pagination, { page: 2, results_per_page: '30', total_results: '35' });
    assert.deepEqual(serialsOf(second), serials.slice(30));
  });

  test('a page past the end is empty and still tells the total', async () => {
    const { token } = await freshCustomer();
    await createMany(token, 3, uniqueSerial('L'));

    const response = await list(token, '?page=5&results_per_page=2');

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().pagination, { page: 5, results_per_page: '2', total_results: '3' });
    assert.deepEqual(response.json().data, []);
  });

  test('results_per_page 1 gives one OKM a page', async () => {
    const { token } = await freshCustomer();
    const serials = await createMany(token, 3, uniqueSerial('L'));

    const response = await list(token, '?page=2&results_per_page=1');

    assert.deepEqual(serialsOf(response), [serials[1]]);
  });

  test('results_per_page 100 is accepted', async () => {
    const { token } = await freshCustomer();
    await createMany(token, 2, uniqueSerial('L'));

    const response = await list(token, '?results_per_page=100');

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().pagination.results_per_page, '100');
    assert.equal(response.json().data.length, 2);
  });

  test('results_per_page 0 or 101, page 0 and non-numbers are refused with 400 naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['?results_per_page=0', /^querystring\.results_per_page: must be >= 1$/],
      ['?results_per_page=101', /^querystring\.results_per_page: must be <= 100$/],
      ['?page=0', /^querystring\.page: must be >= 1$/],
      ['?page=two', /^querystring\.page: must be integer$/],
      ['?page=1.5', /^querystring\.page: must be integer$/],
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
    assert.equal(newer.json().pagination.total_results, '2');
    assert.deepEqual(serialsOf(older), []);
    assert.equal(older.json().pagination.total_results, '0');
  });

  test('an OKM is in the never-polled list until it polls, then in the in-step or the drifting list by its last answer, and moves when the answer changes', async () => {
    const { token } = await freshCustomer();
    const [settled, corrected] = await createMany(token, 2, uniqueSerial('ST'));
    const inStep = () => ({ kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });
    const inState = async (state: string) => {
      const response = await list(token, `?state=${state}`);
      return { serials: serialsOf(response), total: Number(response.json().pagination.total_results) };
    };
    const states = async () => [await inState('in_step'), await inState('drifting'), await inState('never_polled')];
    const before = await states();

    assert.deepEqual((await poll(t, settled!, inStep())).json(), {});
    assert.deepEqual((await poll(t, corrected!, { ...inStep(), pollingInterval: 300 })).json(), { pollingInterval: t.settings.fleetPollingInterval });
    const afterFirstPolls = await states();
    assert.deepEqual((await poll(t, corrected!, inStep())).json(), {});

    const none = { serials: [], total: 0 };
    assert.deepEqual(before, [none, none, { serials: [settled, corrected], total: 2 }]);
    assert.deepEqual(afterFirstPolls, [{ serials: [settled], total: 1 }, { serials: [corrected], total: 1 }, none]);
    assert.deepEqual(await states(), [{ serials: [settled, corrected], total: 2 }, none, none]);
  });

  test('overdue=true lists the OKMs that missed three polls; overdue=false the others, including never-polled ones', async () => {
    const { token } = await freshCustomer();
    const [late, punctual, never, lateByFleetDefault] = await createMany(token, 4, uniqueSerial('L'));
    await t.db.updateTable('okms').set({ polling_interval: 10 }).where('serial_number', 'in', [late!, punctual!]).execute();
    await setLastPoll(t, late!, 31_000);
    await setLastPoll(t, punctual!, 20_000);
    await setLastPoll(t, lateByFleetDefault!, 3 * t.settings.fleetPollingInterval * 1000 + 5_000);

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

    const response = await list(token, '?firmware_version=4.0&overdue=true');

    assert.deepEqual(serialsOf(response), [b]);
  });

  test('an admin without a customer lists every customer\'s OKMs; with one, only that customer\'s', async () => {
    const first = await freshCustomer();
    const second = await freshCustomer();
    const [ofFirst] = await createMany(first.token, 1, uniqueSerial('L'));
    const [ofSecond] = await createMany(second.token, 1, uniqueSerial('L'));

    const all = await list(tokens.admin, '?results_per_page=100');
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

    const response = await list(tokens.admin, '?unassigned=true&results_per_page=100');

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
