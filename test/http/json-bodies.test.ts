import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonNestingDepth } from '../../src/http/json-bodies.ts';
import { ACLS, sampleAcl } from '../acl/helpers.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestApiKey, issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { auditRecordCount } from '../device/config-helpers.ts';

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('JSON nesting depth', () => {
  test('for any JSON value, the text scan agrees with the depth of the parsed value', () => {
    fc.assert(fc.property(fc.jsonValue({ depthSize: 'large' }), (value) => jsonNestingDepth(JSON.stringify(value)) === depthOf(value)));
  });

  test('brackets and escaped quotes inside strings do not count', () => {
    assert.equal(jsonNestingDepth('{"a":"[[[{{\\"]]"}'), 1);
  });
});

forEachDatabase('numbers in JSON bodies that cannot be kept exactly', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let acl: string;
  let apiKey: string;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
    acl = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    apiKey = await issueTestApiKey(t, 'acme');
  });
  after(() => t.close());

  const nonFinite = (field: string) => ({ error_code: 'BAD_REQUEST', error_msg: `${field}: a number that cannot be kept exactly (non-finite)` });
  const send = (method: 'PUT' | 'PATCH' | 'POST', url: string, body: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method, url, payload: body, headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', ...headers } });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  test('PUT of an OKM (creating it) with 1e400 in users_assets is a 400 naming the field; nothing is written', async () => {
    const serial = uniqueSerial('NONFINITE');

    const response = await send('PUT', `${OKMS}/${serial}?customer=acme`, '{"users_assets":[{"v":1e400}]}', bearer(tokens.admin));

    assert.equal(response.statusCode, 400, response.body);
    assert.deepEqual(response.json(), nonFinite('users_assets[0].v'));
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin })).statusCode, 404);
  });

  test('PUT and PATCH of an existing OKM with -1e400, -1E+999 nested deeper or a 400-digit number are 400s naming the field; the OKM is unchanged', async () => {
    const serial = uniqueSerial('NONFINITE');
    await createOkm(t, tokens.acmeWrite, serial, { users_assets: [{ v: 1 }] });
    const before = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeWrite })).json().data;
    const cases: ['PUT' | 'PATCH', string, string][] = [
      ['PUT', '{"users_assets":[{"v":-1e400}]}', 'users_assets[0].v'],
      ['PATCH', '{"users_assets":[{"v":1e400}]}', 'users_assets[0].v'],
      ['PATCH', '{"users_assets":[{"a":{"b":[1,2,-1E+999]}}]}', 'users_assets[0].a.b[2]'],
      ['PUT', `{"users_assets":[{"big":1${'0'.repeat(400)}}]}`, 'users_assets[0].big'],
      ['PATCH', '{"asset_list":1e400}', 'asset_list'],
      ['PATCH', '{"polling_interval":1e400}', 'polling_interval'],
    ];
    const failures: string[] = [];
    for (const [method, body, field] of cases) {
      const response = await send(method, `${OKMS}/${serial}`, body, bearer(tokens.acmeWrite));

      if (response.statusCode !== 400 || response.body !== JSON.stringify(nonFinite(field))) failures.push(`${method} ${body.slice(0, 50)}: ${response.statusCode} ${response.body.slice(0, 200)}`);
    }
    assert.deepEqual(failures, []);
    assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeWrite })).json().data, before);
  });

  test('a buffered message payload, an ACL user_data and audit records with 1e400 are 400s naming the field', async () => {
    const serial = uniqueSerial('NONFINITE');
    await createOkm(t, tokens.acmeWrite, serial);
    const cases: [string, string, Record<string, string>, string][] = [
      [`${OKMS}/${serial}/messages`, '{"type":"notice","payload":{"n":[0,1e400]}}', bearer(tokens.acmeWrite), 'payload.n[1]'],
      [ACLS, JSON.stringify({ ...sampleAcl('acme'), user_data: 0 }).replace('"user_data":0', '"user_data":{"n":1e400}'), bearer(acl), 'user_data.n'],
      [`${t.settings.auditUrl}/${serial}`, '[{"ok":1},{"v":-1e400}]', {}, '[1].v'],
      [`${t.settings.auditUrl}/${serial}`, '1e400', {}, 'body'],
    ];
    const failures: string[] = [];
    for (const [url, body, headers, field] of cases) {
      const response = await send('POST', url, body, headers);

      if (response.statusCode !== 400 || response.body !== JSON.stringify(nonFinite(field))) failures.push(`${url} ${body.slice(0, 40)}: ${response.statusCode} ${response.body.slice(0, 200)}`);
    }
    assert.deepEqual(failures, []);
    assert.equal(await auditRecordCount(t.db, serial), 0);
  });

  test('on the DLock routes the 400 has their error shape', async () => {
    const response = await send('POST', '/v1/dlock', '{"serial_no":"LOCK-NONFINITE","type":"padlock","certificate":"x","enrolment_code":"00","base64":1e400}', bearer(apiKey));

    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { status: 400, msg: 'base64: a number that cannot be kept exactly (non-finite)' });
  });
});

forEachDatabase('a JSON body that starts with a UTF-8 byte-order mark', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let acl: string;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
    acl = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create', 'acl:delete'] });
  });
  after(() => t.close());

  const BOM = '\uFEFF';
  const sendWithBom = (method: 'PUT' | 'PATCH' | 'POST', url: string, body: string, token?: string) =>
    t.app.inject({
      method,
      url,
      payload: Buffer.from(BOM + body, 'utf8'),
      headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });

  test('is read as if the mark were not there on every route that keeps part of its body as sent, and what is stored has no mark', async () => {
    const serial = uniqueSerial('BOM');
    const aclBody = { ...sampleAcl('acme'), user_data: { note: 'kept as sent', n: 1.0 } };
    const cases: [string, () => Promise<{ statusCode: number; body: string }>][] = [
      ['PUT an OKM with users_assets', () => sendWithBom('PUT', `${OKMS}/${serial}?customer=acme`, '{"users_assets":[{"v":1.0}]}', tokens.admin)],
      ['PATCH an OKM with users_assets', () => sendWithBom('PATCH', `${OKMS}/${serial}`, '{"users_assets":[{"v":2.0}]}', tokens.acmeWrite)],
      ['POST a message with a payload', () => sendWithBom('POST', `${OKMS}/${serial}/messages`, '{"type":"notice","payload":{"n":1.0}}', tokens.acmeWrite)],
      ['POST an ACL with user_data', () => sendWithBom('POST', ACLS, JSON.stringify(aclBody).replace('"n":1', '"n":1.0'), acl)],
      ['POST device audit records', () => sendWithBom('POST', `${t.settings.auditUrl}/${serial}`, '[{"v":1.0}]')],
    ];
    const failures: string[] = [];
    for (const [what, send] of cases) {
      const response = await send();
      if (response.statusCode >= 300) failures.push(`${what}: ${response.statusCode} ${response.body.slice(0, 200)}`);
    }

    assert.deepEqual(failures, []);
    const okm = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeWrite });
    assert.match(okm.body, /"users_assets":\[\{"v":2\.0\}\]/);
    const stored = await call(t, 'GET', `${ACLS}/${aclBody.id}`, { token: acl });
    assert.match(stored.body, /"user_data":\{"note":"kept as sent","n":1\.0\}/);
    assert.doesNotMatch(okm.body + stored.body, /\uFEFF/);
    assert.equal(await auditRecordCount(t.db, serial), 1);
  });

  test('a mark anywhere but first is not skipped: the body is bad JSON, a 400', async () => {
    const response = await t.app.inject({ method: 'POST', url: ACLS, payload: `{${BOM}"id":1}`, headers: { 'content-type': 'application/json', authorization: `Bearer ${acl}` } });

    assert.equal(response.statusCode, 400, response.body);
  });
});
