import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SignJWT, generateKeyPair } from 'jose';
import { actingCustomer, principalOf, requireScopes } from '../../src/auth/guard.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';

function addProbeRoutes(app: FastifyInstance) {
  app.get('/probe/acl', { preHandler: requireScopes('acl:read', 'acl:create') }, async (request) => {
    const principal = principalOf(request);
    return { subject: principal.subject, customer: principal.customer?.name ?? null, isAdmin: principal.isAdmin };
  });
  app.get<{ Querystring: { customer?: string } }>('/probe/acting', { preHandler: requireScopes('acl:read') }, async (request) => {
    const customer = await actingCustomer(app.db, principalOf(request), request.query.customer);
    return { customer: customer?.name ?? null };
  });
}

async function signForeign(claims: Record<string, unknown>, alg = 'ES256') {
  const { privateKey } = await generateKeyPair(alg);
  return new SignJWT(claims).setProtectedHeader({ alg }).setExpirationTime('1h').sign(privateKey);
}

forEachDatabase('requireScopes guard', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind, {}, addProbeRoutes)));
  after(() => t.close());

  const get = (url: string, token?: string) =>
    t.app.inject({ method: 'GET', url, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

  test('a token with all the required scopes reaches the route, which sees its principal', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create'] });

    const response = await get('/probe/acl', token);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { subject: 'customer:acme', customer: 'acme', isAdmin: false });
  });

  test('a request without an Authorization header is refused with 401 and an invalid_token challenge', async () => {
    const response = await get('/probe/acl');

    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: 'Missing bearer token' });
  });

  test('a token missing one of the required scopes is refused with 403 Missing required scopes', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });

    const response = await get('/probe/acl', token);

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' });
  });

  test('a token from an untrusted issuer is refused with 401', async () => {
    const token = await signForeign({ iss: 'https://elsewhere.example', aud: 'keyfleet', scope: 'admin' });

    const response = await get('/probe/acl', token);

    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
  });

  test('an admin token acts for a named customer and for all customers when none is named', async () => {
    await createTestCustomer(t, 'globex');
    const token = await issueTestToken(t, { scopes: ['admin'] });

    const named = await get('/probe/acting?customer=globex', token);
    const all = await get('/probe/acting', token);

    assert.deepEqual(named.json(), { customer: 'globex' });
    assert.deepEqual(all.json(), { customer: null });
  });

  test('a customer-bound token asking for another customer is refused with 403', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });

    const response = await get('/probe/acting?customer=globex2', token);

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Token may not act for customer globex2' });
  });
});
