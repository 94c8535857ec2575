import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from './admin-helpers.ts';

const BULK = '/api/v1/okm-bulk-actions';
const LIMIT = 4;

forEachDatabase('OKM bulk actions', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let acmeReadOnly: string;
  before(async () => {
    t = await buildTestApp(kind, { BULK_ACTION_MAX: String(LIMIT), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    tokens = await issueTokens(t);
    acmeReadOnly = tokens.acmeRead;
  });
  after(() => t.close());

  /** `count` fresh OKMs of acme under one new serial prefix, with the settings given. */
  const acmeOkms = async (count: number, settings: Record<string, unknown> = {}, token = tokens.acmeWrite) => {
    const prefix = uniqueSerial('BULK');
    const serials = Array.from({ length: count }, (_, index) => `${prefix}.${index}`);
    for (const serial of serials) await createOkm(t, token, serial, settings);
    return { prefix, serials };
  };
  const okm = async (serial: string, token = tokens.admin) => (await call(t, 'GET', `${OKMS}/${serial}`, { token })).json().data;
  const preview = (token: string, body: unknown) => call(t, 'POST', `${BULK}/preview`, { token, payload: body });
  const apply = (token: string, body: unknown) => call(t, 'POST', BULK, { token, payload: body });

  test('configure: the preview names the OKMs the filter selects; applying changes exactly those, in one go, each with its okm.configured entry', async () => {
    const { prefix, serials } = await acmeOkms(3, { polling_interval: 60 });
    const other = await acmeOkms(1, { polling_interval: 60 });
    const body = { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 300, cache_mode: 2 } } };

    const previewed = await preview(acmeReadOnly, body);
    assert.equal(previewed.statusCode, 200, previewed.body);
    assert.deepEqual(previewed.json().data, { count: 3, serial_numbers: serials, limit: LIMIT, over_limit: false, applied: false });
    assert.equal((await okm(serials[0]!)).polling_interval, 60, 'the preview changes nothing');

    const since = await lastAuditId(t.db);
    const applied = await apply(tokens.acmeWrite, { ...body, serial_numbers: previewed.json().data.serial_numbers });
    assert.equal(applied.statusCode, 200, applied.body);
    assert.deepEqual(applied.json().data, { ...previewed.json().data, applied: true });
    for (const serial of serials) {
      const record = await okm(serial);
      assert.equal(record.polling_interval, 300);
      assert.equal(record.cache_mode, 2);
    }
    assert.equal((await okm(other.serials[0]!)).polling_interval, 60, 'an OKM outside the filter is untouched');
    const entries = await auditEntriesAfter(t.db, since);
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.entity.id, entry.before, entry.after]),
      serials.map((serial) => ['okm.configured', serial, { cache_mode: null, polling_interval: 60 }, { cache_mode: 2, polling_interval: 300 }]),
    );
    assert.equal(new Set(entries.map((entry) => entry.request_id)).size, 1, 'the one request names them all');
  });

  test('configure pins a firmware release of the catalog; an unknown release is a 400 and no OKM changes', async () => {
    await addRelease(t.db, 'kas', '9.1.0');
    const { prefix, serials } = await acmeOkms(2);
    const refused = await apply(tokens.acmeWrite, { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { firmware: { kas: '9.9.9' } } } });
    assert.equal(refused.statusCode, 400, refused.body);
    const pinned = await apply(tokens.acmeWrite, { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { firmware: { kas: '9.1.0' } } } });
    assert.equal(pinned.statusCode, 200, pinned.body);
    for (const serial of serials) assert.equal((await okm(serial)).firmware.kas, '9.1.0');
  });

  test('queue_message: each OKM selected gets the message (payload as sent) and its okm.message_queued entry', async () => {
    const { prefix, serials } = await acmeOkms(2);
    const since = await lastAuditId(t.db);
    const payloadText = '{"door": 2,  "note":"bulk"}';
    const response = await call(t, 'POST', BULK, {
      token: tokens.acmeWrite,
      payload: `{"filter":{"serial_prefix":"${prefix}"},"action":{"type":"queue_message","message":{"type":"open-door","payload":${payloadText}}}}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(response.statusCode, 200, response.body);
    for (const serial of serials) {
      const messages = await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite });
      assert.match(messages.body, /"payload":\{"door": 2, {2}"note":"bulk"\}/);
    }
    assert.deepEqual((await auditEntriesAfter(t.db, since)).map((entry) => [entry.action, entry.entity.id]), serials.map((serial) => ['okm.message_queued', serial]));
  });

  test('remove_subscriber_url with no other filter takes the URL out of every OKM that holds it, keeping their other URLs; an admin reaches every customer\'s', async () => {
    const dead = `https://hooks.example/${uniqueSerial('dead')}`;
    const alive = 'https://hooks.example/alive';
    const acme = await acmeOkms(2, { subscribe_urls: { status: [alive, dead] } });
    const beta = await acmeOkms(1, { subscribe_urls: { status: [dead] } }, tokens.betaWrite);
    const untouched = await acmeOkms(1, { subscribe_urls: { status: [alive] } });
    const body = { filter: {}, action: { type: 'remove_subscriber_url', url: dead } };

    const asAcme = await preview(tokens.acmeWrite, body);
    assert.deepEqual(asAcme.json().data.serial_numbers, acme.serials, "a customer's preview holds its own OKMs only");
    const previewed = await preview(tokens.admin, body);
    assert.deepEqual(previewed.json().data.serial_numbers, [...acme.serials, ...beta.serials].sort());

    const since = await lastAuditId(t.db);
    const applied = await apply(tokens.admin, { ...body, serial_numbers: previewed.json().data.serial_numbers });
    assert.equal(applied.statusCode, 200, applied.body);
    assert.deepEqual(applied.json().data.serial_numbers, previewed.json().data.serial_numbers);
    for (const serial of acme.serials) assert.deepEqual((await okm(serial)).subscribe_urls.status, [alive]);
    assert.deepEqual((await okm(beta.serials[0]!)).subscribe_urls.status, []);
    assert.deepEqual((await okm(untouched.serials[0]!)).subscribe_urls.status, [alive]);
    const listed = await call(t, 'GET', `${OKMS}?subscriber_url=${encodeURIComponent(dead)}`, { token: tokens.admin });
    assert.deepEqual(listed.json().data, []);
    const entries = await auditEntriesAfter(t.db, since);
    assert.deepEqual(entries.map((entry) => entry.action), ['okm.configured', 'okm.configured', 'okm.configured']);
    assert.deepEqual(entries.find((entry) => entry.entity.id === acme.serials[0])!.after, { subscribe_urls: { status: [alive] } });
  });

  test('assign is for an admin only; it moves every OKM selected, each with its okm.assigned entry', async () => {
    const { prefix, serials } = await acmeOkms(2);
    const body = { filter: { serial_prefix: prefix }, action: { type: 'assign', customer: 'beta' } };
    const refused = await apply(tokens.acmeWrite, body);
    assert.equal(refused.statusCode, 403, refused.body);
    const since = await lastAuditId(t.db);
    const applied = await apply(tokens.admin, body);
    assert.equal(applied.statusCode, 200, applied.body);
    for (const serial of serials) assert.equal((await okm(serial)).customer, 'beta');
    assert.deepEqual((await auditEntriesAfter(t.db, since)).map((entry) => [entry.action, entry.entity.id]), serials.map((serial) => ['okm.assigned', serial]));
  });

  test("tenant isolation: a customer's action never reaches another customer's OKMs, and naming that customer is 403", async () => {
    const beta = await acmeOkms(2, { polling_interval: 60 }, tokens.betaWrite);
    const body = { filter: { serial_prefix: beta.prefix }, action: { type: 'configure', settings: { polling_interval: 10 } } };
    const applied = await apply(tokens.acmeWrite, body);
    assert.equal(applied.statusCode, 200);
    assert.equal(applied.json().data.count, 0);
    const named = await apply(tokens.acmeWrite, { ...body, filter: { ...body.filter, customer: 'beta' } });
    assert.equal(named.statusCode, 403);
    const unassigned = await preview(tokens.acmeWrite, { filter: { unassigned: true }, action: body.action });
    assert.equal(unassigned.statusCode, 403);
    for (const serial of beta.serials) assert.equal((await okm(serial)).polling_interval, 60);
  });

  test('the bound: a filter selecting more than BULK_ACTION_MAX OKMs previews as over the limit, and applying it is 409 with nothing changed', async () => {
    const { prefix, serials } = await acmeOkms(LIMIT + 1, { polling_interval: 60 });
    const body = { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 90 } } };
    const previewed = await preview(tokens.acmeWrite, body);
    assert.equal(previewed.json().data.over_limit, true);
    assert.equal(previewed.json().data.count, LIMIT);
    const applied = await apply(tokens.acmeWrite, body);
    assert.equal(applied.statusCode, 409, applied.body);
    assert.match(applied.json().error_msg, new RegExp(`more than ${LIMIT} OKMs`));
    for (const serial of serials) assert.equal((await okm(serial)).polling_interval, 60);
  });

  test('a bulk change gives each OKM a new version: a PATCH with the ETag read before it is a 412', async () => {
    const { prefix, serials } = await acmeOkms(1, { polling_interval: 60 });
    const before = await call(t, 'GET', `${OKMS}/${serials[0]}`, { token: tokens.acmeWrite });
    const etag = before.headers.etag as string;
    assert.ok(etag);
    const applied = await apply(tokens.acmeWrite, { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 90 } } });
    assert.equal(applied.statusCode, 200);
    const stale = await call(t, 'PATCH', `${OKMS}/${serials[0]}`, { token: tokens.acmeWrite, payload: { polling_interval: 120 }, headers: { 'if-match': etag } });
    assert.equal(stale.statusCode, 412, stale.body);
    assert.equal((await okm(serials[0]!)).polling_interval, 90);
  });

  test('serial_numbers that are not what the filter selects now: 409, nothing changes', async () => {
    const { prefix, serials } = await acmeOkms(2, { polling_interval: 60 });
    const applied = await apply(tokens.acmeWrite, { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 90 } }, serial_numbers: [serials[0]] });
    assert.equal(applied.statusCode, 409);
    for (const serial of serials) assert.equal((await okm(serial)).polling_interval, 60);
  });

  test('a failure of any audit entry rolls the whole action back', async () => {
    const { prefix, serials } = await acmeOkms(2, { polling_interval: 60 });
    const response = await withFailureAfterEachAuditEntry(t.db, kind, () =>
      apply(tokens.acmeWrite, { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 90 } } }),
    );
    assert.equal(response.statusCode, 500);
    for (const serial of serials) assert.equal((await okm(serial)).polling_interval, 60);
  });

  test('every parameter is validated: 400 for an unknown action, a setting a bulk action may not set, an unknown filter, a bad URL; scopes as the single-OKM routes', async () => {
    const bad = [
      { filter: {}, action: { type: 'delete' } },
      { filter: {}, action: { type: 'configure', settings: {} } },
      { filter: {}, action: { type: 'configure', settings: { asset_list: [] } } },
      { filter: { colour: 'red' }, action: { type: 'configure', settings: { polling_interval: 10 } } },
      { filter: { state: 'asleep' }, action: { type: 'configure', settings: { polling_interval: 10 } } },
      { filter: {}, action: { type: 'remove_subscriber_url', url: 'ftp://x' } },
      { filter: {}, action: { type: 'configure', settings: { polling_interval: 1 } } },
      { action: { type: 'configure', settings: { polling_interval: 10 } } },
    ];
    for (const body of bad) {
      const response = await apply(tokens.acmeWrite, body);
      assert.equal(response.statusCode, 400, `${JSON.stringify(body)}: ${response.body}`);
    }
    const readOnly = await apply(acmeReadOnly, { filter: {}, action: { type: 'configure', settings: { polling_interval: 10 } } });
    assert.equal(readOnly.statusCode, 403);
    const noOkm = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });
    assert.equal((await preview(noOkm, { filter: {}, action: { type: 'configure', settings: { polling_interval: 10 } } })).statusCode, 403);
  });
});
