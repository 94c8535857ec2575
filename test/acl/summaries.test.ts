import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, fetchPage, textKeyAt, walkKeys, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { newSerial } from '../device/config-helpers.ts';
import { ACLS, call, createOkm, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const SUMMARIES = '/api/v1/acl-summaries';
const JSON_UTF8 = 'application/json; charset=utf-8';

interface Listed {
  statusCode: number;
  json(): { data: Array<{ id: string }> };
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

  test('pages hold the ACLs of GET /api/v1/acls, in its order, walked by cursor', async () => {
    const summarised = { t, url: `${SUMMARIES}?customer=${customer}`, token, keyOf: (summary: Record<string, unknown>) => summary.id as string };
    const first = await fetchPage(summarised, summarised.url);
    const acls = await call(t, 'GET', `${ACLS}?customer=${customer}&results_per_page=100`, { token });

    assert.deepEqual(first.body.data.map((summary) => summary.id), ids.slice(0, 33));
    assert.equal(first.body.next_cursor, null);
    assert.deepEqual(listedIds(acls), ids);
    for (const limit of [5, 10, 32]) {
      assert.deepEqual(await walkKeys(summarised, limit), ids, `limit ${limit}`);
    }
  });

  test('the counts are those of the whole ACLs, for every ACL of the customer', async () => {
    const acls = (await call(t, 'GET', `${ACLS}?customer=${customer}&results_per_page=100`, { token })).json().data;
    const summarised = (await summaries('&limit=100')).json().data;

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
    assert.equal(asAdmin.json().data.length, 33);
  });

  test('without a token it is 401, without acl:read 403', async () => {
    const anonymous = await call(t, 'GET', `${SUMMARIES}?customer=acme`, {});
    const okmOnly = await call(t, 'GET', `${SUMMARIES}?customer=acme`, { token: tokens.acmeOkm });

    assert.equal(anonymous.statusCode, 401);
    assert.equal(okmOnly.statusCode, 403);
  });

  for (const [query, message] of [
    ['', /^customer: required$/],
    [`?customer=${customer}&limit=501`, /^querystring\.limit: /],
    [`?customer=${customer}&page=2`, /^page: unknown field$/],
    [`?customer=${customer}&results_per_page=10`, /^results_per_page: unknown field$/],
    ['?customer=a%00b', /^querystring\.customer: /],
    [`?customer=${customer}&fields=all`, /fields/],
  ] as const) {
    test(`"${query}" is a 400 (${message.source})`, async () => {
      const response = await call(t, 'GET', `${SUMMARIES}${query}`, { token: tokens.admin });

      assert.equal(response.statusCode, 400);
      assert.match(response.json().error_msg, message);
    });
  }

  let customers = 0;
  describe('paged by cursor', () => {
    // Rows stored as an ACL's POST stores them, without its validation: the summary reads the id, the counts, the link and the times.
    cursorListContract('GET /api/v1/acl-summaries', async (): Promise<CursorListFixture> => {
      const name = `summary-pages-${++customers}`;
      const reader = await issueTestToken(t, { customer: name, scopes: ['acl:read'] });
      const customerId = (await findCustomerByName(t.db, name))!.id;
      const idAt = textKeyAt(`00000000-0000-4000-8${String(customers).padStart(3, '0')}-0000000`);
      return {
        t,
        url: `${SUMMARIES}?customer=${name}`,
        token: reader,
        keyOf: (summary) => summary.id as string,
        keyAt: idAt,
        add: async (keys) => {
          if (keys.length === 0) return;
          await t.db.insertInto('acls').values(keys.map((id) => ({ id: String(id), customer_id: customerId, okm_serial: null, created_at: 1, updated_at: 1 }))).execute();
          await t.db.insertInto('acl_contents').values(keys.map((id) => ({ acl_id: String(id), users: '[]', locks: '[]', user_data: null, user_count: 0, lock_count: 0 }))).execute();
        },
        remove: async (id) => {
          await t.db.deleteFrom('acl_contents').where('acl_id', '=', String(id)).execute();
          await t.db.deleteFrom('acls').where('id', '=', String(id)).execute();
        },
      };
    });
  });
});
