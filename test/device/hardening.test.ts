import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { issueDeviceToken } from '../../src/okm/device-tokens.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { listPendingOkms } from '../../src/okm/pending-repository.ts';
import { acceptPendingOkm } from '../../src/okm/pending-service.ts';
import { findOkm, insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, call, createOkm, issueTokens, type Tokens } from '../okm/admin-helpers.ts';
import { auditRecordCount, auditRecordsOf, newSerial, poll } from './config-helpers.ts';

const PENDING = '/api/v1/pending-okms';
const PENDING_ERROR = { error_code: 'NOT_FOUND', error_msg: 'OKM pending: an operator has to accept it' };
/** Well-formed, but no OKM's. */
const FORGED_TOKEN = `kf_okm_${'A'.repeat(43)}`;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function postAudit(t: TestApp, serial: string, records: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: `${t.settings.auditUrl}/${serial}`,
    payload: JSON.stringify(records),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

async function knownOkm(t: TestApp): Promise<string> {
  const serial = newSerial('HRD');
  await insertOkm(t.db, serial, null, UNCONFIGURED_OKM, Date.now());
  return serial;
}

async function pendingEntry(t: TestApp, serial: string) {
  return (await listPendingOkms(t.db, { after: undefined, limit: 500 })).items.find((pending) => pending.serialNumber === serial);
}

forEachDatabase('device hardening off (the defaults)', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
  });
  after(() => t.close());

  test('an unknown OKM is inserted and answered 204, as contract §0.4 says, and nothing is pending', async () => {
    const serial = newSerial('HRD');

    const response = await poll(t, serial);

    assert.equal(response.statusCode, 204);
    assert.ok(await findOkm(t.db, serial));
    assert.equal(await pendingEntry(t, serial), undefined);
  });

  test('a device token, even a wrong one, is ignored on polls and audit posts', async () => {
    const serial = await knownOkm(t);
    await issueDeviceToken(t.db, serial, Date.now());

    const withoutToken = await poll(t, serial);
    const withWrongToken = await poll(t, serial, {}, bearer(FORGED_TOKEN));
    const withGarbage = await poll(t, serial, {}, { authorization: 'Basic Zm9vOmJhcg==' });
    const audit = await postAudit(t, serial, { n: 1 }, bearer(FORGED_TOKEN));

    assert.equal(withoutToken.statusCode, 200);
    assert.equal(withWrongToken.statusCode, 200);
    assert.equal(withGarbage.statusCode, 200);
    assert.equal(audit.statusCode, 201);
  });

  test('an audit post from an unknown serial number is 404 and records nothing as pending', async () => {
    const serial = newSerial('HRD');

    const response = await postAudit(t, serial, { n: 1 });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { error_code: 'NOT_FOUND', error_msg: 'OKM not found' });
    assert.equal(await pendingEntry(t, serial), undefined);
  });
});

forEachDatabase('auto-enrol off (OKM_AUTO_ENROL=false)', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind, { OKM_AUTO_ENROL: 'false' });
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  test('a poll from an unknown serial number is answered 404 JSON and recorded as pending, not as an OKM', async () => {
    const serial = newSerial('HRD');

    const response = await poll(t, serial, { kasFirmware: '2.1.0', cacheMode: 'garbage' });

    assert.equal(response.statusCode, 404);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(response.json(), PENDING_ERROR);
    assert.equal(await findOkm(t.db, serial), undefined);
    const pending = await pendingEntry(t, serial);
    assert.ok(pending);
    assert.equal(pending.lastIp, '127.0.0.1');
    assert.equal(pending.firmwareVersion, '2.1.0');
    assert.equal(pending.calls, 1);
    assert.equal(pending.firstSeenAt, pending.lastSeenAt);
  });

  test('later calls of a pending OKM update its last call and count, and keep its first', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial, { kasFirmware: '1.0' });
    const first = await pendingEntry(t, serial);

    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await poll(t, serial);
    const audit = await postAudit(t, serial, { n: 1 });

    assert.equal(again.statusCode, 404);
    assert.deepEqual(audit.json(), PENDING_ERROR);
    const pending = await pendingEntry(t, serial);
    assert.equal(pending?.calls, 3);
    assert.equal(pending?.firstSeenAt, first?.firstSeenAt);
    assert.ok(pending!.lastSeenAt > first!.lastSeenAt);
    assert.equal(pending?.firmwareVersion, '1.0', 'a call without kasFirmware keeps the last one reported');
  });

  test('an audit post from an unknown serial number is recorded as pending and stores nothing', async () => {
    const serial = newSerial('HRD');

    const response = await postAudit(t, serial, [{ n: 1 }]);

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), PENDING_ERROR);
    assert.equal((await pendingEntry(t, serial))?.calls, 1);
    assert.equal(await auditRecordCount(t.db, serial), 0);
  });

  test('a pending OKM is not an OKM to the admin API', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    const list = await call(t, 'GET', `${OKMS}?serial_prefix=${serial}`, { token: tokens.admin });
    const one = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin });

    assert.ok(!list.json().data.some((okm: { serial_number: string }) => okm.serial_number === serial));
    assert.equal(one.statusCode, 404);
  });

  test('an OKM that already exists polls as before', async () => {
    const serial = await knownOkm(t);

    const response = await poll(t, serial, { kasDateTime: 'not a number' });

    assert.equal(response.statusCode, 200);
    assert.ok('kasDateTime' in response.json());
  });

  test('once accepted, the OKM is no longer pending and its next poll is served', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    const accepted = await acceptPendingOkm(t.db, serial, undefined, Date.now());
    const next = await poll(t, serial);

    assert.deepEqual({ serialNumber: accepted.serialNumber, customer: accepted.customer }, { serialNumber: serial, customer: null });
    assert.equal(await pendingEntry(t, serial), undefined);
    assert.equal(next.statusCode, 200);
    assert.ok('kasDateTime' in next.json());
  });

  test('GET /api/v1/pending-okms lists the pending OKMs for an admin token, by serial number, a page at a time', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial, { kasFirmware: '3.2' });

    const response = await call(t, 'GET', `${PENDING}?limit=500`, { token: tokens.admin });

    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.message, 'Resource fetched successfully');
    assert.equal(body.next_cursor, null);
    const serials = body.data.map((pending: { serial_number: string }) => pending.serial_number);
    assert.deepEqual(serials, [...serials].sort());
    const entry = body.data.find((pending: { serial_number: string }) => pending.serial_number === serial);
    assert.deepEqual(
      { ...entry, first_seen_at: typeof entry.first_seen_at, last_seen_at: typeof entry.last_seen_at },
      { serial_number: serial, first_seen_at: 'string', last_seen_at: 'string', last_ip: '127.0.0.1', firmware_version: '3.2', calls: 1 },
    );
  });

  test('POST /api/v1/pending-okms/{serial}/accept gives the OKM to the customer named and answers 201 with its record', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial, { kasFirmware: '2.0' });

    const response = await call(t, 'POST', `${PENDING}/${serial}/accept`, { token: tokens.admin, payload: { customer: 'acme' } });
    const next = await poll(t, serial);
    const asAcme = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 201);
    const { data } = response.json();
    assert.equal(data.serial_number, serial);
    assert.equal(data.customer, 'acme');
    assert.equal(data.last_ip, '127.0.0.1');
    assert.equal(data.firmware_version, '2.0');
    assert.equal(next.statusCode, 200);
    assert.equal(asAcme.statusCode, 200);
  });

  test('an OKM accepted from its pending calls is never polled until its next poll: its record, its drift report and the never_polled list say so alike', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);
    const accepted = await call(t, 'POST', `${PENDING}/${serial}/accept`, { token: tokens.admin });
    const neverPolled = async () => (await call(t, 'GET', `${OKMS}?state=never_polled&limit=100`, { token: tokens.admin })).json().data.map((okm: { serial_number: string }) => okm.serial_number);

    assert.equal(accepted.json().data.state, 'never_polled');
    assert.notEqual(accepted.json().data.last_sync_time, null, 'its pending calls are on record');
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.admin })).json().data.state, 'never_polled');
    assert.ok((await neverPolled()).includes(serial));

    await poll(t, serial);
    const { state } = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin })).json().data;
    assert.notEqual(state, 'never_polled');
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/drift`, { token: tokens.admin })).json().data.state, state);
    assert.ok(!(await neverPolled()).includes(serial));
  });

  test('POST …/accept without a body accepts the OKM for no customer', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    const response = await call(t, 'POST', `${PENDING}/${serial}/accept`, { token: tokens.admin });

    assert.equal(response.statusCode, 201);
    assert.equal(response.json().data.customer, null);
  });

  test('accepting a serial number that is not pending is 404; with an unknown customer, 400 and it stays pending', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    const notPending = await call(t, 'POST', `${PENDING}/${newSerial('HRD')}/accept`, { token: tokens.admin, payload: {} });
    const unknownCustomer = await call(t, 'POST', `${PENDING}/${serial}/accept`, { token: tokens.admin, payload: { customer: 'nobody' } });

    assert.equal(notPending.statusCode, 404);
    assert.match(notPending.json().error_msg, /^No pending OKM /);
    assert.equal(unknownCustomer.statusCode, 400);
    assert.equal(unknownCustomer.json().error_msg, 'customer: unknown customer nobody');
    assert.ok(await pendingEntry(t, serial));
  });

  test('the pending-OKM routes need the admin scope', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    const list = await call(t, 'GET', PENDING, { token: tokens.acmeWrite });
    const accept = await call(t, 'POST', `${PENDING}/${serial}/accept`, { token: tokens.acmeWrite, payload: {} });
    const anonymous = await call(t, 'GET', PENDING);

    assert.equal(list.statusCode, 403);
    assert.equal(accept.statusCode, 403);
    assert.equal(anonymous.statusCode, 401);
    assert.ok(await pendingEntry(t, serial));
  });

  test('a pending OKM that an operator creates through PUT is no longer listed as pending', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    await createOkm(t, tokens.acmeWrite, serial);
    const next = await poll(t, serial);

    assert.equal(await pendingEntry(t, serial), undefined);
    assert.equal(next.statusCode, 200);
  });
});

forEachDatabase('device tokens required (OKM_DEVICE_TOKENS=required)', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind, { OKM_DEVICE_TOKENS: 'required' });
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  async function okmWithToken(): Promise<{ serial: string; token: string }> {
    const serial = await knownOkm(t);
    const { token } = await issueDeviceToken(t.db, serial, Date.now());
    return { serial, token };
  }

  test("a poll with the OKM's token is served", async () => {
    const { serial, token } = await okmWithToken();

    const response = await poll(t, serial, {}, bearer(token));

    assert.equal(response.statusCode, 200);
    assert.ok('kasDateTime' in response.json());
  });

  test("a poll without the OKM's token is 401 with a Bearer challenge, and is not recorded", async () => {
    const { serial } = await okmWithToken();
    const { token: otherOkmsToken } = await okmWithToken();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no token', {}, 'Missing device token'],
      ['a forged token', bearer(FORGED_TOKEN), 'Invalid device token'],
      ["another OKM's token", bearer(otherOkmsToken), 'Invalid device token'],
      ['a malformed token', bearer('kf_okm_short'), 'Invalid device token'],
      ['a Basic credential', { authorization: 'Basic Zm9vOmJhcg==' }, 'Invalid device token'],
    ];
    for (const [name, headers, message] of cases) {
      const response = await poll(t, serial, {}, headers);

      assert.equal(response.statusCode, 401, name);
      assert.match(String(response.headers['www-authenticate']), /^Bearer/, name);
      assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: message }, name);
    }
    assert.equal((await findOkm(t.db, serial))?.lastSyncTime, null);
  });

  test('a token in the query string is not accepted', async () => {
    const { serial, token } = await okmWithToken();

    const response = await poll(t, serial, { token, access_token: token });

    assert.equal(response.statusCode, 401);
  });

  test('an OKM that has no token yet gets 401', async () => {
    const serial = await knownOkm(t);

    const response = await poll(t, serial, {}, bearer(FORGED_TOKEN));

    assert.equal(response.statusCode, 401);
  });

  test('a replaced token stops working at once; the new one works', async () => {
    const { serial, token: old } = await okmWithToken();
    const { token: replacement } = await issueDeviceToken(t.db, serial, Date.now());

    const withOld = await poll(t, serial, {}, bearer(old));
    const withNew = await poll(t, serial, {}, bearer(replacement));

    assert.equal(withOld.statusCode, 401);
    assert.equal(withNew.statusCode, 200);
  });

  test('an unknown serial number is still enrolled (204); its next polls need the token an operator issues', async () => {
    const serial = newSerial('HRD');

    const first = await poll(t, serial);
    const second = await poll(t, serial);
    const { token } = await issueDeviceToken(t.db, serial, Date.now());
    const third = await poll(t, serial, {}, bearer(token));

    assert.equal(first.statusCode, 204);
    assert.equal(second.statusCode, 401);
    assert.equal(third.statusCode, 200);
  });

  test("audit posts need the OKM's token too; without it nothing is stored", async () => {
    const { serial, token } = await okmWithToken();
    const { token: otherOkmsToken } = await okmWithToken();

    const missing = await postAudit(t, serial, { n: 1 });
    const other = await postAudit(t, serial, { n: 2 }, bearer(otherOkmsToken));
    const right = await postAudit(t, serial, { n: 3 }, bearer(token));

    assert.equal(missing.statusCode, 401);
    assert.equal(other.statusCode, 401);
    assert.equal(right.statusCode, 201);
    assert.deepEqual(await auditRecordsOf(t.db, serial), [{ n: 3 }]);
  });

  test('a bad serial number is still a 400, token or not', async () => {
    const response = await poll(t, 'bad%00serial');

    assert.equal(response.statusCode, 400);
  });

  test('POST /api/v1/okms/{serial}/device-token issues a working token for an admin, shown once in the answer', async () => {
    const { serial, token: old } = await okmWithToken();

    const response = await call(t, 'POST', `${OKMS}/${serial}/device-token`, { token: tokens.admin });
    const record = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin });

    assert.equal(response.statusCode, 201);
    const { data } = response.json();
    assert.equal(data.serial_number, serial);
    assert.match(data.token, /^kf_okm_[A-Za-z0-9_-]{43}$/);
    assert.equal(record.json().data.device_token_issued_at, data.issued_at);
    assert.equal((await poll(t, serial, {}, bearer(data.token))).statusCode, 200);
    assert.equal((await poll(t, serial, {}, bearer(old))).statusCode, 401);
  });

  test('issuing a device token through the API needs the admin scope and an existing OKM', async () => {
    const serial = await knownOkm(t);

    const customerToken = await call(t, 'POST', `${OKMS}/${serial}/device-token`, { token: tokens.acmeWrite });
    const unknown = await call(t, 'POST', `${OKMS}/${newSerial('HRD')}/device-token`, { token: tokens.admin });

    assert.equal(customerToken.statusCode, 403);
    assert.equal(unknown.statusCode, 404);
  });
});

forEachDatabase('device tokens required: an OKM created between the token check and the call', (kind) => {
  let t: TestApp;
  /** Serial numbers whose OKM an operator creates after the route's token check and before its handler. */
  const createdDuringCall = new Set<string>();
  before(async () => {
    t = await buildTestApp(kind, { OKM_DEVICE_TOKENS: 'required' }, (app) => {
      app.addHook('preHandler', async (request) => {
        const serial = [...createdDuringCall].find((candidate) => request.url.includes(candidate));
        if (serial) await insertOkm(t.db, serial, null, UNCONFIGURED_OKM, Date.now());
      });
    });
  });
  after(() => t.close());

  test('a poll gets 401, not the configuration', async () => {
    const serial = newSerial('HRD');
    createdDuringCall.add(serial);

    const response = await poll(t, serial);

    assert.equal(response.statusCode, 401);
    assert.equal(response.json().error_msg, 'Invalid device token');
  });

  test('an audit post is answered as for an unknown OKM and stores nothing', async () => {
    const serial = newSerial('HRD');
    createdDuringCall.add(serial);

    const response = await postAudit(t, serial, { n: 1 });

    assert.equal(response.statusCode, 404);
    assert.equal(await auditRecordCount(t.db, serial), 0);
  });
});

forEachDatabase('both hardening steps on', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind, { OKM_AUTO_ENROL: 'false', OKM_DEVICE_TOKENS: 'required' });
  });
  after(() => t.close());

  test('a new device is pending until accepted, then needs the token issued for it', async () => {
    const serial = newSerial('HRD');

    const unknown = await poll(t, serial);
    await acceptPendingOkm(t.db, serial, undefined, Date.now());
    const acceptedWithoutToken = await poll(t, serial);
    const { token } = await issueDeviceToken(t.db, serial, Date.now());
    const provisioned = await poll(t, serial, {}, bearer(token));

    assert.equal(unknown.statusCode, 404);
    assert.equal(acceptedWithoutToken.statusCode, 401);
    assert.equal(provisioned.statusCode, 200);
  });

  test('a token cannot be issued for a pending OKM before it is accepted', async () => {
    const serial = newSerial('HRD');
    await poll(t, serial);

    await assert.rejects(issueDeviceToken(t.db, serial, Date.now()), { message: `OKM ${serial} is pending: accept it first` });
  });
});
