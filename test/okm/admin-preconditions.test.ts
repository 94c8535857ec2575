import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { addUrlRelease, call, createOkm, devicePoll, issueTokens, OKMS, uniqueSerial, uniqueVersion, type Tokens } from './admin-helpers.ts';

const RACE_ROUNDS = 25;

forEachDatabase('OKM configuration preconditions (If-Match, RFC 9110)', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  async function okmOfAcme() {
    const serial = uniqueSerial('PRE');
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 300 });
    const read = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeWrite });
    return { serial, etag: read.headers.etag as string };
  }

  const patch = (serial: string, body: object, etag?: string) =>
    call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: body, ...(etag === undefined ? {} : { headers: { 'if-match': etag } }) });

  test('reads and writes answer with the ETag of the configuration; a write with the current one succeeds with a new one', async () => {
    const { serial, etag } = await okmOfAcme();

    const patched = await patch(serial, { polling_interval: 400 }, etag);

    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(patched.statusCode, 200);
    assert.notEqual(patched.headers.etag, etag);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).headers.etag, patched.headers.etag);
  });

  test('a poll, which changes only what the device reports, leaves the ETag', async () => {
    const { serial, etag } = await okmOfAcme();

    await devicePoll(t, serial, '?firmwareVersion=1.0.0&pollingInterval=300');

    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).headers.etag, etag);
  });

  test('a stale If-Match on PATCH, PUT, DELETE and the customer assignment is a 412 with the current record; nothing is written', async () => {
    const { serial, etag } = await okmOfAcme();
    const theirs = await patch(serial, { cache_mode: 2 });
    assert.equal(theirs.statusCode, 200);

    const stalePatch = await patch(serial, { polling_interval: 500 }, etag);
    const stalePut = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: {}, headers: { 'if-match': etag } });
    const staleDelete = await call(t, 'DELETE', `${OKMS}/${serial}`, { token: tokens.acmeWrite, headers: { 'if-match': etag } });
    const staleAssign = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: null }, headers: { 'if-match': etag } });

    for (const response of [stalePatch, stalePut, staleDelete, staleAssign]) {
      assert.equal(response.statusCode, 412);
      assert.equal(response.headers.etag, theirs.headers.etag);
      assert.equal(response.json().error_code, 'PRECONDITION_FAILED');
      assert.deepEqual(response.json().current, theirs.json().data);
    }
    const now = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;
    assert.equal(now.polling_interval, 300);
    assert.equal(now.customer, 'acme');
  });

  test('a new firmware pin changes the ETag (pins are configuration)', async () => {
    const { serial, etag } = await okmOfAcme();
    const version = uniqueVersion();
    await addUrlRelease(t, tokens.admin, 'kas', version);

    const pinned = await patch(serial, { firmware: { kas: version } }, etag);
    const staleUnpin = await patch(serial, { firmware: { kas: null } }, etag);

    assert.equal(pinned.statusCode, 200);
    assert.notEqual(pinned.headers.etag, etag);
    assert.equal(staleUnpin.statusCode, 412);
    assert.equal(staleUnpin.json().current.firmware.kas, version);
  });

  test('If-Match on a PUT of a serial number nobody holds is a 412 and creates nothing; * matches an existing OKM', async () => {
    const serial = uniqueSerial('PRE');
    const created = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.admin, payload: {}, headers: { 'if-match': '*' } });
    const { serial: existing } = await okmOfAcme();
    const any = await patch(existing, { polling_interval: 600 }, '*');

    assert.equal(created.statusCode, 412);
    assert.equal(created.json().current, null);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin })).statusCode, 404);
    assert.equal(any.statusCode, 200);
  });

  test('weak and malformed If-Match values: a weak tag never matches (412), a malformed value is a 400', async () => {
    const { serial, etag } = await okmOfAcme();

    assert.equal((await patch(serial, { polling_interval: 700 }, `W/${etag}`)).statusCode, 412);
    assert.equal((await patch(serial, { polling_interval: 700 }, 'not-a-tag')).statusCode, 400);
    assert.equal((await patch(serial, { polling_interval: 700 })).statusCode, 200);
  });

  test('changes by other paths change the ETag: a bulk action, and the linked ACL\'s lists', async () => {
    const { serial, etag } = await okmOfAcme();
    const body = { filter: { serial_prefix: serial }, action: { type: 'configure', settings: { polling_interval: 900 } } };
    const previewed = await call(t, 'POST', '/api/v1/okm-bulk-actions/preview', { token: tokens.acmeWrite, payload: body });
    const applied = await call(t, 'POST', '/api/v1/okm-bulk-actions', { token: tokens.acmeWrite, payload: { ...body, serial_numbers: previewed.json().data.serial_numbers } });
    assert.equal(applied.statusCode, 200, applied.body);
    const afterBulk = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).headers.etag as string;
    assert.notEqual(afterBulk, etag);
    assert.equal((await patch(serial, { polling_interval: 901 }, etag)).statusCode, 412);

    const aclToken = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create'] });
    const acl = { customer: 'acme', locks: ['LOCK-1'], users: [{ user_id: 1, pin_hash: 'abc', auth_time: 8, sounder: false, sounder_delay: 0, sounder_duration: 0, sounder_volume: 2, permissions: [1] }], okm_id: serial };
    const created = await call(t, 'POST', '/api/v1/acls', { token: aclToken, payload: acl });
    assert.equal(created.statusCode, 201, created.body);
    const linked = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).headers.etag as string;
    assert.notEqual(linked, afterBulk);
    await call(t, 'PUT', `/api/v1/acls/${created.json().data.id}`, { token: aclToken, payload: { ...acl, locks: ['LOCK-1', 'LOCK-2'], users: [{ ...acl.users[0], permissions: [1, 17] }] } });
    assert.notEqual((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).headers.etag, linked);
  });

  test('two writers racing with the same If-Match: exactly one wins', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { serial, etag } = await okmOfAcme();
      const [first, second] = await Promise.all([patch(serial, { polling_interval: 1000 }, etag), patch(serial, { polling_interval: 2000 }, etag)]);
      assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 412], `round ${round}`);
      const [winner, loser] = first.statusCode === 200 ? [first, second] : [second, first];
      assert.equal(loser.headers.etag, winner.headers.etag);
      assert.equal(loser.json().current.polling_interval, winner.json().data.polling_interval);
    }
  });
});
