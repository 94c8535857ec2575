import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SignJWT, base64url, generateKeyPair } from 'jose';
import { actingCustomer, principalOf, requireScopes } from '../../src/auth/guard.ts';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
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
  app.get('/probe/unguarded', async (request) => principalOf(request).subject);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

forEachDatabase('requireScopes guard', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind, {}, addProbeRoutes);
    await createTestCustomer(t, 'acme');
    await createTestCustomer(t, 'globex');
  });
  after(() => t.close());

  const get = (url: string, authorization?: string) =>
    t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });

  /** Signs arbitrary claims with the deployment's own key, for tokens issueToken refuses to make. */
  async function signWithDeploymentKey(claims: Record<string, unknown>, expiresAt: number | null = nowSeconds() + 600) {
    const key = await loadActiveSigningKey(t.db, t.app.keyRing);
    const jwt = new SignJWT({ iss: t.settings.jwtIssuer, aud: t.settings.jwtAudience, sub: 'probe', ...claims }).setProtectedHeader({
      alg: key.algorithm,
      kid: key.kid,
    });
    if (expiresAt !== null) jwt.setExpirationTime(expiresAt);
    return jwt.sign(key.privateKey);
  }

  test('a token with all the required scopes reaches the route, which sees its principal', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create'] });

    const response = await get('/probe/acl', `Bearer ${token}`);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { subject: 'customer:acme', customer: 'acme', isAdmin: false });
  });

  test('scopes given as an scp array count like the scope string', async () => {
    const token = await signWithDeploymentKey({ customer: 'acme', scp: ['acl:read', 'acl:create'] });

    const response = await get('/probe/acl', `Bearer ${token}`);

    assert.equal(response.statusCode, 200);
  });

  test('an admin token passes every scope check', async () => {
    const token = await issueTestToken(t, { scopes: ['admin'] });

    const response = await get('/probe/acl', `Bearer ${token}`);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { subject: 'admin', customer: null, isAdmin: true });
  });

  test('a token missing one of the required scopes is refused with 403 Missing required scopes', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'okm:write'] });

    const response = await get('/probe/acl', `Bearer ${token}`);

    assert.equal(response.statusCode, 403);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(response.headers['www-authenticate'], undefined);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' });
  });

  describe('a missing or invalid token is refused with 401 and an invalid_token challenge', () => {
    const cases: { name: string; authorization: () => Promise<string | undefined>; reason: string }[] = [
      { name: 'no Authorization header', authorization: async () => undefined, reason: 'Missing bearer token' },
      { name: 'a Basic credential', authorization: async () => 'Basic YWRtaW46YWRtaW4=', reason: 'Authorization header is not a Bearer token' },
      { name: 'garbage instead of a JWT', authorization: async () => 'Bearer not.a.jwt', reason: 'Malformed token' },
      {
        name: 'an expired token',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'admin' }, nowSeconds() - 3600)}`,
        reason: 'Token expired',
      },
      {
        name: 'a token without exp',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'admin' }, null)}`,
        reason: 'Token claim exp is missing',
      },
      {
        name: 'a signature by another key under the deployment kid',
        authorization: async () => {
          const { kid } = await loadActiveSigningKey(t.db, t.app.keyRing);
          const { privateKey } = await generateKeyPair('EdDSA');
          const forged = await new SignJWT({ scope: 'admin' })
            .setProtectedHeader({ alg: 'EdDSA', kid })
            .setIssuer(t.settings.jwtIssuer)
            .setAudience(t.settings.jwtAudience)
            .setExpirationTime('10m')
            .sign(privateKey);
          return `Bearer ${forged}`;
        },
        reason: 'Token signature is invalid',
      },
      {
        name: 'an untrusted issuer',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'admin', iss: 'https://elsewhere.example' })}`,
        reason: 'Token issuer is not trusted',
      },
      {
        name: 'another audience',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'admin', aud: 'someone-else' })}`,
        reason: 'Token claim aud is invalid',
      },
      {
        name: 'a customer that does not exist',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'acl:read acl:create', customer: 'ghost' })}`,
        reason: 'Token customer ghost does not exist',
      },
      {
        name: 'neither a customer nor the admin scope',
        authorization: async () => `Bearer ${await signWithDeploymentKey({ scope: 'acl:read acl:create' })}`,
        reason: 'Token names no customer and lacks the admin scope',
      },
      {
        name: 'alg none',
        authorization: async () => {
          const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
          const claims = { iss: t.settings.jwtIssuer, aud: t.settings.jwtAudience, scope: 'admin', exp: nowSeconds() + 600 };
          return `Bearer ${header}.${base64url.encode(JSON.stringify(claims))}.`;
        },
        reason: 'Token algorithm not allowed',
      },
      {
        name: 'alg HS256',
        authorization: async () => {
          const hmac = await new SignJWT({ scope: 'admin' })
            .setProtectedHeader({ alg: 'HS256' })
            .setIssuer(t.settings.jwtIssuer)
            .setAudience(t.settings.jwtAudience)
            .setExpirationTime('10m')
            .sign(new TextEncoder().encode('a shared secret of at least 32 bytes'));
          return `Bearer ${hmac}`;
        },
        reason: 'Token algorithm not allowed',
      },
    ];
    for (const { name, authorization, reason } of cases) {
      test(name, async () => {
        const response = await get('/probe/acl', await authorization());

        assert.equal(response.statusCode, 401);
        assert.equal(response.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE);
        assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: reason });
      });
    }
  });

  describe('scopes are split on single spaces only (RFC 6749 §3.3): any other whitespace makes the token 401', () => {
    const invalidClaim = (claim: string) => `Token claim ${claim} is invalid: scope names are printable ASCII, separated by single spaces (RFC 6749 §3.3)`;
    const odd = ['acl:read\tadmin', 'acl:read\nadmin', 'acl:read\radmin', 'acl:read\u000badmin', 'acl:read\u00a0admin', 'acl:read\u3000admin', 'acl:read  admin', ' admin', 'admin ', 'acl:read\u2028admin'];
    for (const scope of odd) {
      test(`${JSON.stringify(scope)} in scope or scp, with a customer or without, is refused`, async () => {
        const answers: string[] = [];
        for (const claims of [{ scope }, { scope, customer: 'acme' }, { scp: scope }, { scp: ['acl:read', scope] }]) {
          const response = await get('/probe/acl', `Bearer ${await signWithDeploymentKey(claims)}`);

          const reason = invalidClaim('scope' in claims ? 'scope' : 'scp');
          const refused = response.statusCode === 401 && response.headers['www-authenticate'] === INVALID_TOKEN_CHALLENGE && response.json().error_msg === reason;
          if (!refused) answers.push(`${JSON.stringify(claims)}: ${response.statusCode} ${response.body}`);
        }
        assert.deepEqual(answers, []);
      });
    }

    test('single spaces separate scopes; an empty scope claim is no scopes', async () => {
      const spaced = await signWithDeploymentKey({ scope: 'acl:read acl:create', customer: 'acme' });
      const empty = await signWithDeploymentKey({ scope: '', customer: 'acme' });

      assert.equal((await get('/probe/acl', `Bearer ${spaced}`)).statusCode, 200);
      assert.deepEqual((await get('/probe/acl', `Bearer ${empty}`)).json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' });
    });
  });

  test('a token expired by less than the clock tolerance is still accepted', async () => {
    const token = await signWithDeploymentKey({ scope: 'admin' }, nowSeconds() - 5);

    const response = await get('/probe/acl', `Bearer ${token}`);

    assert.equal(response.statusCode, 200);
  });

  test('a route that reads the principal without the guard fails loudly with a 500', async () => {
    const response = await get('/probe/unguarded');

    assert.equal(response.statusCode, 500);
  });

  describe('actingCustomer', () => {
    test('a customer-bound token acts for its own customer, named or not', async () => {
      const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });

      const named = await get('/probe/acting?customer=acme', `Bearer ${token}`);
      const unnamed = await get('/probe/acting', `Bearer ${token}`);

      assert.deepEqual(named.json(), { customer: 'acme' });
      assert.deepEqual(unnamed.json(), { customer: 'acme' });
    });

    test('a customer-bound token asking for another customer is refused with 403', async () => {
      const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });

      const response = await get('/probe/acting?customer=globex', `Bearer ${token}`);

      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Token may not act for customer globex' });
    });

    test('an admin token acts for any named customer, and for all customers when none is named', async () => {
      const token = await issueTestToken(t, { scopes: ['admin'] });

      const globex = await get('/probe/acting?customer=globex', `Bearer ${token}`);
      const acme = await get('/probe/acting?customer=acme', `Bearer ${token}`);
      const all = await get('/probe/acting', `Bearer ${token}`);

      assert.deepEqual(globex.json(), { customer: 'globex' });
      assert.deepEqual(acme.json(), { customer: 'acme' });
      assert.deepEqual(all.json(), { customer: null });
    });

    test('an admin token naming a customer that does not exist gets 400', async () => {
      const token = await issueTestToken(t, { scopes: ['admin'] });

      const response = await get('/probe/acting?customer=nobody', `Bearer ${token}`);

      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'customer: unknown customer nobody' });
    });
  });
});
