import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { newSerial } from '../okm/config-helpers.ts';
import { ACLS, call, createOkm, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const SUMMARIES = '/api/v1/acl-summaries';
const JSON_UTF8 = 'application/json; charset=utf-8';

interface Listed {
  statusCode: number;
  json(): { pagination: unknown; data: Array<{ id: string }> };
}

forEachDatabase('GET /api/v1/acl-summaries', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  const customer = 'summarised';
  let token: string;
  const ids: string[] = [];
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
    token = await issueTestToken(t, { customer, scopes: ['acl:read', 'acl:create'] });
    for (let index = 0; index < 33; index++) {
      const acl = sampleAcl(customer, { users: index % 4, locks: 1 + (index % 5) });
      assert.equal((await call(t, 'POST', ACLS, { token, payload: acl })).statusCode, 201);
      ids.push(acl.id);
    }
    ids.sort();
  });
  after(() => t.close());

  const summaries = (query: string, as = token) => call(t, 'GET', `${SUMMARIES}?customer=${customer}${query}`, { token: as });
  const listedIds = (response: Listed) => response.json().data.map((acl) => acl.id);

  test('each summary has the ACL\'s id, customer, user and lock counts, link, last change and user_data as sent', async () => {
    const serial = newSerial('SUMMARY');
    await createOkm(t, tokens.acmeOkm, serial);
    const acl = { ...sampleAcl('acme', { users: 7, locks: 11 }), user_data: { site: 'Store 412', floors: [1, 2], note: 'ü' } };
    const writtenAfter = Date.now();
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: { ...acl, okm_id: serial } });

    const response = await call(t, 'GET', `${SUMMARIES}?customer=acme`, { token: tokens.acme });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    const [summary] = response.json().data;
    assert.deepEqual({ ...summary, updated_at: undefined }, { id: acl.id, customer: 'acme', user_count: 7, lock_count: 11, okm_id: serial, updated_at: undefined, user_data: acl.user_data });
    assert.ok(Date.parse(summary.updated_at) >= writtenAfter - 1 && Date.parse(summary.updated_at) <= Date.now(), summary.updated_at);
    assert.match(response.body, /"user_data":\{"site":"Store 412","floors":\[1,2\],"note":"ü"\}\}/);
  });

  test('an ACL without users, locks, link or user_data is summarised with zeros, null and no user_data; a replace moves updated_at', async () => {
    const acl = { customer: 'beta', users: [], locks: [] };
    const created = (await call(t, 'POST', ACLS, { token: tokens.beta, payload: acl })).json().data;
    const before = (await call(t, 'GET', `${SUMMARIES}?customer=beta`, { token: tokens.beta })).json().data.find((item: { id: string }) => item.id === created.id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const replaced = await call(t, 'PUT', `${ACLS}/${created.id}`, { token: tokens.beta, payload: { ...sampleAcl('beta', { users: 2, locks: 3 }), id: created.id } });
    const after = (await call(t, 'GET', `${SUMMARIES}?customer=beta`, { token: tokens.beta })).json().data.find((item: { id: string }) => item.id === created.id);

    assert.equal(replaced.statusCode, 200);
    assert.deepEqual({ ...before, updated_at: undefined }, { id: created.id, customer: 'beta', user_count: 0, lock_count: 0, okm_id: null, updated_at: undefined });
    assert.deepEqual([after.user_count, after.lock_count], [2, 3]);
    assert.ok(Date.parse(after.updated_at) > Date.parse(before.updated_at), `${before.updated_at} → ${after.updated_at}`);
  });

  test('pages are those of GET /api/v1/acls: the same ids in the same order, the same pagination', async () => {
    for (const query of ['', '&page=2&results_per_page=10', '&page=4&results_per_page=10', '&page=9&results_per_page=100']) {
      const [acls, summarised] = await Promise.all([call(t, 'GET', `${ACLS}?customer=${customer}${query}`, { token }), summaries(query)]);

      assert.equal(summarised.statusCode, 200);
      assert.deepEqual(summarised.json().pagination, acls.json().pagination, query);
      assert.deepEqual(listedIds(summarised), listedIds(acls), query);
    }
    assert.deepEqual(listedIds(await summaries('')), ids.slice(0, 30));
    assert.deepEqual((await summaries('')).json().pagination, { page: 1, results_per_page: '30', total_results: '33' });
    assert.equal((await summaries('&results_per_page=5')).json().data.length, 5);
  });

  test('the counts are those of the whole ACLs, for every ACL of the customer', async () => {
    const acls = (await call(t, 'GET', `${ACLS}?customer=${customer}&results_per_page=100`, { token })).json().data;
    const summarised = (await summaries('&results_per_page=100')).json().data;

    assert.deepEqual(
      summarised.map((item: { id: string; user_count: number; lock_count: number }) => [item.id, item.user_count, item.lock_count]),
      acls.map((acl: { id: string; users: unknown[]; locks: unknown[] }) => [acl.id, acl.users.length, acl.locks.length]),
    );
  });

  test('tenants: another customer\'s token is refused as on GET /api/v1/acls; an admin sees any customer', async () => {
    const [acls, summarised] = await Promise.all([
      call(t, 'GET', `${ACLS}?customer=${customer}`, { token: tokens.beta }),
      summaries('', tokens.beta),
    ]);
    const asAdmin = await summaries('', tokens.admin);

    assert.equal(summarised.statusCode, acls.statusCode);
    assert.ok(summarised.statusCode >= 400, `${summarised.statusCode}`);
    assert.deepEqual(summarised.json(), acls.json());
    assert.equal(asAdmin.json().pagination.total_results, '33');
  });

  test('without a token it is 401, without acl:read 403', async () => {
    const anonymous = await call(t, 'GET', `${SUMMARIES}?customer=acme`, {});
    const okmOnly = await call(t, 'GET', `${SUMMARIES}?customer=acme`, { token: tokens.acmeOkm });

    assert.equal(anonymous.statusCode, 401);
    assert.equal(okmOnly.statusCode, 403);
  });

  for (const [query, message] of [
    ['', /^customer: required$/],
    [`?customer=${customer}&results_per_page=101`, /^querystring\.results_per_page: /],
    [`?customer=${customer}&page=0`, /^querystring\.page: /],
    ['?customer=a%00b', /^querystring\.customer: /],
    [`?customer=${customer}&fields=all`, /fields/],
  ] as const) {
    test(`"${query}" is a 400 (${message.source})`, async () => {
      const response = await call(t, 'GET', `${SUMMARIES}${query}`, { token: tokens.admin });

      assert.equal(response.statusCode, 400);
      assert.match(response.json().error_msg, message);
    });
  }
});
