import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, call, issueAclTokens, sampleAcl, type AclBodyFixture, type AclTokens } from './helpers.ts';

const JSON_UTF8 = 'application/json; charset=utf-8';
const NOT_FOUND = { error_code: 'NOT_FOUND', error_msg: 'Access control list not found' };

/** The ACL as responses show it: the body without okm_id. */
const shown = ({ okm_id: _okmId, ...acl }: AclBodyFixture) => acl;

forEachDatabase('ACL routes', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  const post = (acl: unknown, token = tokens.acme) => call(t, 'POST', `${ACLS}/`, { token, payload: acl });

  test('POST /api/v1/acls/ creates the ACL: 201 with the message of contract §0.6 and the ACL as sent', async () => {
    const acl = sampleAcl('acme');

    const response = await post(acl);

    assert.equal(response.statusCode, 201);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    assert.deepEqual(response.json(), { message: 'Resource created successfully', data: acl });
  });

  test('POST without an id generates a UUID v4', async () => {
    const { id: _id, ...acl } = sampleAcl('acme');

    const response = await post(acl);

    assert.equal(response.statusCode, 201);
    assert.match(response.json().data.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('GET one ACL answers 200 "Resource fetched successfully" with the stored ACL', async () => {
    const acl = sampleAcl('acme');
    await post(acl);

    const response = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    assert.deepEqual(response.json(), { message: 'Resource fetched successfully', data: acl });
  });

  test('user_data comes back byte for byte as sent: number forms, key order, big integers and spacing kept', async () => {
    const acl = sampleAcl('acme');
    const userData = '{ "b": 1.0, "2": [1e2, -0, 0.10], "a": 12345678901234567890123, "s": "\\u00e9\\n" }';
    const body = JSON.stringify({ ...acl, user_data: 'PLACEHOLDER' }).replace('"PLACEHOLDER"', userData);

    const created = await call(t, 'POST', ACLS, { token: tokens.acme, payload: body, headers: { 'content-type': 'application/json' } });
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    for (const response of [created, fetched]) assert.ok(response.body.includes(`"user_data":${userData}}`), response.body);
  });

  test('user_data is the last of duplicate members, as JSON.parse reads it, and escaped member names count', async () => {
    const acl = sampleAcl('acme');
    const { user_data: _userData, ...withoutUserData } = acl;
    const body = `{"user_data":{"first":1},${JSON.stringify(withoutUserData).slice(1, -1)},"user\\u005fdata":{"second":2}}`;

    await call(t, 'POST', ACLS, { token: tokens.acme, payload: body, headers: { 'content-type': 'application/json' } });
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.ok(fetched.body.endsWith(',"user_data":{"second":2}}}'), fetched.body);
  });

  test('an ACL sent without user_data is shown without it', async () => {
    const { user_data: _userData, ...acl } = sampleAcl('acme');
    await post(acl);

    const response = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.deepEqual(response.json().data, acl);
  });

  test('responses never include okm_id', async () => {
    const acl = { ...sampleAcl('acme'), okm_id: null };

    const created = await post(acl);
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.deepEqual(created.json().data, shown(acl));
    assert.equal(Object.hasOwn(fetched.json().data, 'okm_id'), false);
  });

  test('POST with the id of an existing ACL of the same customer overwrites it (201)', async () => {
    const first = sampleAcl('acme');
    await post(first);
    const second = { ...sampleAcl('acme', { users: 1, locks: 1 }), id: first.id, user_data: { v: 2 } };

    const response = await post(second);
    const fetched = await call(t, 'GET', `${ACLS}/${first.id}`, { token: tokens.acme });

    assert.equal(response.statusCode, 201);
    assert.deepEqual(fetched.json().data, second);
  });

  test('POST with the id of another customer\'s ACL is the duplicate-key 400, and that ACL is unchanged', async () => {
    const betas = sampleAcl('beta');
    await post(betas, tokens.beta);

    const response = await post({ ...sampleAcl('acme'), id: betas.id });

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_code, 'BAD_REQUEST');
    assert.match(response.json().error_msg, /duplicate key/);
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${betas.id}`, { token: tokens.beta })).json().data, betas);
  });

  test('ids are case-insensitive: an upper-case id is stored, shown and found in lower case', async () => {
    const acl = sampleAcl('acme');

    const created = await post({ ...acl, id: acl.id.toUpperCase() });
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id.toUpperCase()}`, { token: tokens.acme });

    assert.equal(created.json().data.id, acl.id);
    assert.deepEqual(fetched.json().data, acl);
  });

  test('PUT replaces the ACL: 200 "Resource updated successfully"', async () => {
    const acl = sampleAcl('acme');
    await post(acl);
    const replacement = { ...sampleAcl('acme', { users: 4, locks: 2 }), id: acl.id };

    const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: replacement });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    assert.deepEqual(response.json(), { message: 'Resource updated successfully', data: replacement });
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data, replacement);
  });

  test('PUT takes the id from the path; the body may leave it out', async () => {
    const acl = sampleAcl('acme');
    await post(acl);
    const { id: _id, ...replacement } = sampleAcl('acme', { users: 1 });

    const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: replacement });

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().data, { ...replacement, id: acl.id });
  });

  test('PUT with a body id other than the path\'s is a 400 naming id, and changes nothing', async () => {
    const acl = sampleAcl('acme');
    await post(acl);

    const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...sampleAcl('acme', { users: 1 }) } });

    assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'id: must be the id in the path' });
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data, acl);
  });

  test('PUT of a missing id is 404 "Access control list not found" and creates nothing', async () => {
    const acl = sampleAcl('acme');

    const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: acl });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), NOT_FOUND);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('PUT cannot change the customer: 400, and the ACL is unchanged', async () => {
    const acl = sampleAcl('acme');
    await post(acl);

    const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.admin, payload: { ...acl, customer: 'beta', users: [] } });

    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'customer: cannot be changed' });
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data, acl);
  });

  test('DELETE answers 204 with no body, and the ACL is gone', async () => {
    const acl = sampleAcl('acme');
    await post(acl);

    const response = await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('GET and DELETE of a missing id are 404 "Access control list not found"', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await call(t, method, `${ACLS}/${randomUUID()}`, { token: tokens.acme });

      assert.equal(response.statusCode, 404, method);
      assert.deepEqual(response.json(), NOT_FOUND);
    }
  });

  test('an id in the path that is not a UUID is a 400 naming it', async () => {
    const response = await call(t, 'GET', `${ACLS}/not-a-uuid`, { token: tokens.acme });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^params\.id: /);
  });

  test('PATCH is 405 "Cannot PATCH" with Allow, on the collection and on one ACL, even without a token', async () => {
    for (const [url, allow] of [
      [`${ACLS}/${randomUUID()}`, 'GET, HEAD, PUT, DELETE'],
      [ACLS, 'GET, HEAD, POST'],
    ] as const) {
      const response = await call(t, 'PATCH', url, { payload: {} });

      assert.equal(response.statusCode, 405, url);
      assert.equal(response.headers['content-type'], JSON_UTF8);
      assert.equal(response.headers.allow, allow);
      assert.deepEqual(response.json(), { error_code: 'METHOD_NOT_ALLOWED', error_msg: 'Cannot PATCH' });
    }
  });

  test('every route takes a trailing slash or none', async () => {
    const acl = sampleAcl('acme');

    assert.equal((await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl })).statusCode, 201);
    assert.equal((await call(t, 'POST', `${ACLS}/`, { token: tokens.acme, payload: acl })).statusCode, 201);
    assert.equal((await call(t, 'GET', `${ACLS}/?customer=acme`, { token: tokens.acme })).statusCode, 200);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}/`, { token: tokens.acme })).statusCode, 200);
    assert.equal((await call(t, 'PUT', `${ACLS}/${acl.id}/`, { token: tokens.acme, payload: acl })).statusCode, 200);
    assert.equal((await call(t, 'PATCH', `${ACLS}/${acl.id}/`, { token: tokens.acme, payload: acl })).statusCode, 405);
    assert.equal((await call(t, 'DELETE', `${ACLS}/${acl.id}/`, { token: tokens.acme })).statusCode, 204);
  });

  test('total_results counts creations and deletions, concurrent ones too, and not overwrites or failed writes', async () => {
    const customer = 'counted';
    const token = await issueTestToken(t, { customer, scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    const total = async () => (await call(t, 'GET', `${ACLS}?customer=${customer}`, { token })).json().pagination.total_results;
    const acls = Array.from({ length: 10 }, () => sampleAcl(customer, { users: 1, locks: 1 }));

    await Promise.all(acls.map((acl) => post(acl, token)));
    await post({ ...acls[0]!, user_data: { overwritten: true } }, token);
    await post({ ...sampleAcl(customer), okm_id: 'NO-SUCH-OKM' }, token);
    await Promise.all(acls.slice(0, 3).map((acl) => call(t, 'DELETE', `${ACLS}/${acl.id}`, { token })));
    await call(t, 'DELETE', `${ACLS}/${acls[0]!.id}`, { token });

    assert.equal(await total(), '7');
  });

  test('concurrent PUTs of one ACL never interleave: the stored ACL is one of the bodies, whole', async () => {
    const acl = sampleAcl('acme', { users: 50, locks: 40 });
    await post(acl);
    const bodies = Array.from({ length: 12 }, (_, index) => ({
      ...sampleAcl('acme', { users: 20 + index, locks: 30 + index }),
      id: acl.id,
      user_data: { writer: index },
    }));

    const responses = await Promise.all(bodies.map((body) => call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: body })));
    const stored = (await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data;

    assert.deepEqual(responses.map((response) => response.statusCode), bodies.map(() => 200));
    assert.deepEqual(stored, bodies[stored.user_data.writer]);
  });
});

forEachDatabase('ACL list', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  const customer = 'lister';
  const ids: string[] = [];
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
    const token = await issueTestToken(t, { customer, scopes: ['acl:read', 'acl:create'] });
    for (let index = 0; index < 102; index++) {
      const acl = sampleAcl(customer, { users: 1, locks: 1 });
      const response = await call(t, 'POST', ACLS, { token, payload: acl });
      assert.equal(response.statusCode, 201);
      ids.push(acl.id);
    }
    ids.sort();
    await call(t, 'POST', ACLS, { token: tokens.beta, payload: sampleAcl('beta') });
  });
  after(() => t.close());

  const list = (query: string) => call(t, 'GET', `${ACLS}?customer=${customer}${query}`, { token: tokens.admin });
  const listedIds = (response: { json(): { data: { id: string }[] } }) => response.json().data.map((acl) => acl.id);

  test('the list is the customer\'s ACLs by id, 30 a page by default, with the pagination of contract §8.3 (counts as strings)', async () => {
    const response = await list('');

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], JSON_UTF8);
    const body = response.json();
    assert.equal(body.message, 'Resource fetched successfully');
    assert.deepEqual(body.pagination, { page: 1, results_per_page: '30', total_results: '102' });
    assert.deepEqual(listedIds(response), ids.slice(0, 30));
  });

  test('page 2 of 100 holds the last two ACLs', async () => {
    const response = await list('&page=2&results_per_page=100');

    assert.deepEqual(response.json().pagination, { page: 2, results_per_page: '100', total_results: '102' });
    assert.deepEqual(listedIds(response), ids.slice(100));
  });

  test('results_per_page=1 gives one ACL a page', async () => {
    const response = await list('&page=3&results_per_page=1');

    assert.deepEqual(response.json().pagination, { page: 3, results_per_page: '1', total_results: '102' });
    assert.deepEqual(listedIds(response), [ids[2]]);
  });

  test('a page past the end is empty, with the total', async () => {
    const response = await list('&page=9&results_per_page=100');

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), {
      message: 'Resource fetched successfully',
      pagination: { page: 9, results_per_page: '100', total_results: '102' },
      data: [],
    });
  });

  for (const [query, field] of [
    ['&results_per_page=0', 'results_per_page'],
    ['&results_per_page=101', 'results_per_page'],
    ['&page=0', 'page'],
    ['&page=x', 'page'],
  ] as const) {
    test(`${query.slice(1)} is a 400 naming ${field}`, async () => {
      const response = await list(query);

      assert.equal(response.statusCode, 400);
      assert.match(response.json().error_msg, new RegExp(`^querystring\\.${field}: `));
    });
  }

  test('customer is required', async () => {
    const response = await call(t, 'GET', ACLS, { token: tokens.acme });

    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'customer: required' });
  });

  test('a customer with no ACLs gets an empty list', async () => {
    const response = await call(t, 'GET', `${ACLS}?customer=acme`, { token: tokens.acme });

    assert.deepEqual(response.json().pagination, { page: 1, results_per_page: '30', total_results: '0' });
  });
});
