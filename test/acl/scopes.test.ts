import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, ALL_ACL_SCOPES, call, expiredAclToken, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const MISSING_SCOPES = { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' };
const NOT_FOUND = { error_code: 'NOT_FOUND', error_msg: 'Access control list not found' };

interface Route {
  method: InjectOptions['method'];
  url: (id: string) => string;
  scopes: string[];
  body?: boolean;
  success: number;
}

/** Each ACL route with the scopes contract §0.7 gives it. */
const ROUTES: Route[] = [
  { method: 'POST', url: () => `${ACLS}/`, scopes: ['acl:read', 'acl:create'], body: true, success: 201 },
  { method: 'GET', url: () => `${ACLS}?customer=acme`, scopes: ['acl:read'], success: 200 },
  { method: 'GET', url: (id) => `${ACLS}/${id}`, scopes: ['acl:read'], success: 200 },
  { method: 'PUT', url: (id) => `${ACLS}/${id}`, scopes: ['acl:read', 'acl:create'], body: true, success: 200 },
  { method: 'DELETE', url: (id) => `${ACLS}/${id}`, scopes: ['acl:read', 'acl:delete'], success: 204 },
];

forEachDatabase('ACL scopes and tenancy', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  /** A fresh stored ACL of acme and the request of the route on it. */
  async function arrange(route: Route) {
    const acl = sampleAcl('acme');
    assert.equal((await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl })).statusCode, 201);
    return { acl, url: route.url(acl.id), payload: route.body ? acl : undefined };
  }

  for (const route of ROUTES) {
    const name = `${route.method} ${route.url(':id')}`;
    describe(name, () => {
      test('with exactly its scopes it succeeds', async () => {
        const { url, payload } = await arrange(route);
        const token = await issueTestToken(t, { customer: 'acme', scopes: route.scopes });

        const response = await call(t, route.method, url, { token, payload });

        assert.equal(response.statusCode, route.success, response.body);
      });

      for (const [problem, authorization] of [
        ['no token', async () => undefined],
        ['a malformed token', async () => 'Bearer not.a.jwt'],
        ['an expired token', async () => `Bearer ${await expiredAclToken(t)}`],
      ] as const) {
        test(`${problem} is a 401 with an invalid_token challenge`, async () => {
          const { url, payload } = await arrange(route);
          const header = await authorization();

          const response = await call(t, route.method, url, { payload, headers: header === undefined ? {} : { authorization: header } });

          assert.equal(response.statusCode, 401);
          assert.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"');
          assert.equal(response.json().error_code, 'UNAUTHORIZED');
        });
      }

      for (const missing of route.scopes) {
        test(`a token without ${missing} is the 403 of contract §0.9`, async () => {
          const { url, payload } = await arrange(route);
          const others = ALL_ACL_SCOPES.filter((scope) => scope !== missing);
          const token = await issueTestToken(t, { customer: 'acme', scopes: [...others, 'okm:read', 'okm:write'] });

          const response = await call(t, route.method, url, { token, payload });

          assert.equal(response.statusCode, 403);
          assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
          assert.deepEqual(response.json(), MISSING_SCOPES);
        });
      }
    });
  }

  test('another customer\'s token gets 404 "Access control list not found" on GET, PUT and DELETE, and the ACL is unchanged', async () => {
    const acl = sampleAcl('acme');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });

    for (const [method, payload] of [['GET'], ['PUT', { ...acl, customer: 'beta' }], ['DELETE']] as const) {
      const response = await call(t, method, `${ACLS}/${acl.id}`, { token: tokens.beta, payload });

      assert.equal(response.statusCode, 404, method);
      assert.deepEqual(response.json(), NOT_FOUND);
    }
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data, acl);
  });

  test('another customer\'s ACL and a missing one get the same answer', async () => {
    const acl = sampleAcl('acme');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });

    const existing = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.beta });
    const missing = await call(t, 'GET', `${ACLS}/${sampleAcl('acme').id}`, { token: tokens.beta });

    assert.equal(existing.statusCode, missing.statusCode);
    assert.equal(existing.body, missing.body);
  });

  test('a customer token naming another customer (query or body) gets 403 and nothing is written', async () => {
    const acl = sampleAcl('beta');

    const listed = await call(t, 'GET', `${ACLS}?customer=beta`, { token: tokens.acme });
    const posted = await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });

    for (const response of [listed, posted]) {
      assert.equal(response.statusCode, 403);
      assert.equal(response.json().error_code, 'UNAUTHORIZED_ACCESS');
    }
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.admin })).statusCode, 404);
  });

  test('a customer never sees another customer\'s ACLs in its list', async () => {
    await call(t, 'POST', ACLS, { token: tokens.beta, payload: sampleAcl('beta') });

    const response = await call(t, 'GET', `${ACLS}?customer=acme&results_per_page=100`, { token: tokens.acme });

    assert.ok(response.json().data.length > 0);
    assert.ok(response.json().data.every((acl: { customer: string }) => acl.customer === 'acme'));
  });

  test('an admin token with another customer in the query gets 404 for an ACL that is not that customer\'s', async () => {
    const acl = sampleAcl('acme');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });

    const response = await call(t, 'GET', `${ACLS}/${acl.id}?customer=beta`, { token: tokens.admin });
    const own = await call(t, 'GET', `${ACLS}/${acl.id}?customer=acme`, { token: tokens.admin });

    assert.deepEqual(response.json(), NOT_FOUND);
    assert.equal(own.statusCode, 200);
  });

  test('an admin token may write any customer\'s ACLs', async () => {
    const acl = sampleAcl('beta');

    const response = await call(t, 'POST', ACLS, { token: tokens.admin, payload: acl });

    assert.equal(response.statusCode, 201);
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.beta })).json().data, acl);
  });

  test('an admin naming an unknown customer gets a 400 naming it', async () => {
    const response = await call(t, 'POST', ACLS, { token: tokens.admin, payload: sampleAcl('nobody') });

    assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'customer: unknown customer nobody' });
  });
});
