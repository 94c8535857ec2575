import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { principalOf, requireScopes } from '../../src/auth/guard.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { EndlessBodyServer } from '../helpers/endless-body-server.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { eventually } from '../helpers/eventually.ts';

const IDP_ISSUER = 'https://idp.example.test/';
const IDP_AUDIENCE = 'keyfleet-api';
const UNREACHABLE_ISSUER = 'https://down.example.test/';
const ENDLESS_ISSUER = 'https://endless.example.test/';
const HUGE_ISSUER = 'https://huge.example.test/';
/** contract §16: 64 KiB of an answer, and the socket read that crosses it (reads come in pieces of up to 64 KiB). */
const READ_BOUND = 2 * 64 * 1024 + 1024;

interface IdentityProvider {
  jwksUrl: string;
  sign(alg: 'ES256' | 'RS256', claims: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** An identity provider: a real HTTP server on 127.0.0.1 publishing an ES256 and an RS256 key. */
async function startIdentityProvider(): Promise<IdentityProvider> {
  const privateKeys = new Map<string, CryptoKey>();
  const publicJwks: JWK[] = [];
  for (const alg of ['ES256', 'RS256']) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    privateKeys.set(alg, privateKey);
    publicJwks.push({ ...(await exportJWK(publicKey)), kid: `idp-${alg}`, alg, use: 'sig' });
  }
  const server = http.createServer((request, response) => {
    response.writeHead(request.url === '/jwks' ? 200 : 404, { 'content-type': 'application/json' });
    response.end(request.url === '/jwks' ? JSON.stringify({ keys: publicJwks }) : '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/jwks`,
    sign: (alg, claims) =>
      new SignJWT({ iss: IDP_ISSUER, aud: IDP_AUDIENCE, sub: 'user-42', ...claims })
        .setProtectedHeader({ alg, kid: `idp-${alg}` })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKeys.get(alg)!),
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

function addProbeRoute(app: FastifyInstance) {
  app.get('/probe', { preHandler: requireScopes('acl:read') }, async (request) => {
    const principal = principalOf(request);
    return { subject: principal.subject, customer: principal.customer?.name ?? null, isAdmin: principal.isAdmin };
  });
}

forEachDatabase('tokens from an external identity provider', (kind) => {
  let idp: IdentityProvider;
  let t: TestApp;
  before(async () => {
    idp = await startIdentityProvider();
    const externalIssuers = [
      { issuer: IDP_ISSUER, jwks_url: idp.jwksUrl, audience: IDP_AUDIENCE },
      { issuer: UNREACHABLE_ISSUER, jwks_url: 'http://127.0.0.1:1/jwks', audience: IDP_AUDIENCE },
    ];
    t = await buildTestApp(kind, { JWT_EXTERNAL_ISSUERS: JSON.stringify(externalIssuers) }, addProbeRoute);
    await createTestCustomer(t, 'acme');
  });
  after(async () => {
    await t.close();
    await idp.close();
  });

  const probe = (token: string) => t.app.inject({ method: 'GET', url: '/probe', headers: { authorization: `Bearer ${token}` } });

  test('an ES256 token for the configured audience, with scopes in scp, is accepted for its customer', async () => {
    const token = await idp.sign('ES256', { customer: 'acme', scp: ['acl:read'] });

    const response = await probe(token);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { subject: 'user-42', customer: 'acme', isAdmin: false });
  });

  test('an RS256 admin token is accepted', async () => {
    const token = await idp.sign('RS256', { scope: 'admin' });

    const response = await probe(token);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { subject: 'user-42', customer: null, isAdmin: true });
  });

  test('a token for another audience is refused with 401', async () => {
    const token = await idp.sign('ES256', { customer: 'acme', scope: 'acl:read', aud: 'keyfleet' });

    const response = await probe(token);

    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"');
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: 'Token claim aud is invalid' });
  });

  test('a token naming the provider as issuer but signed by a key it does not publish is refused with 401', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({ customer: 'acme', scope: 'acl:read' })
      .setProtectedHeader({ alg: 'ES256', kid: 'not-published' })
      .setIssuer(IDP_ISSUER)
      .setAudience(IDP_AUDIENCE)
      .setExpirationTime('5m')
      .sign(privateKey);

    const response = await probe(token);

    assert.equal(response.statusCode, 401);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: 'Token signing key is unknown' });
  });

  test('scopes split on anything but single spaces grant nothing: a tab, a newline, a no-break space or two spaces before admin is 401', async () => {
    for (const scope of ['acl:read\tadmin', 'acl:read\nadmin', 'acl:read\u00a0admin', 'acl:read  admin']) {
      for (const claims of [{ scope }, { scp: scope }, { scp: [scope] }]) {
        const response = await probe(await idp.sign('ES256', claims));

        assert.equal(response.statusCode, 401, `${JSON.stringify(claims)}: ${response.body}`);
        const claim = 'scope' in claims ? 'scope' : 'scp';
        assert.equal(response.json().error_msg, `Token claim ${claim} is invalid: scope names are printable ASCII, separated by single spaces (RFC 6749 §3.3)`);
      }
    }
  });

  test('a token from a provider whose keys cannot be fetched is refused with 401', async () => {
    const token = await idp.sign('ES256', { iss: UNREACHABLE_ISSUER, customer: 'acme', scope: 'acl:read' });

    const response = await probe(token);

    assert.equal(response.statusCode, 401);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: 'Token issuer keys could not be fetched' });
  });
});

forEachDatabase('JWKS of an external identity provider that answers without end', (kind) => {
  let idp: IdentityProvider;
  let server: EndlessBodyServer;
  let t: TestApp;
  before(async () => {
    idp = await startIdentityProvider();
    server = await EndlessBodyServer.start();
    const externalIssuers = [
      { issuer: ENDLESS_ISSUER, jwks_url: server.url('/endless'), audience: IDP_AUDIENCE },
      { issuer: HUGE_ISSUER, jwks_url: server.url('/huge'), audience: IDP_AUDIENCE },
    ];
    t = await buildTestApp(kind, { JWT_EXTERNAL_ISSUERS: JSON.stringify(externalIssuers) }, addProbeRoute);
    await createTestCustomer(t, 'acme');
  });
  after(async () => {
    await t.close();
    await idp.close();
    await server.close();
  });

  const probe = (token: string) => t.app.inject({ method: 'GET', url: '/probe', headers: { authorization: `Bearer ${token}` } });

  for (const [mode, issuer] of [['endless', ENDLESS_ISSUER], ['huge', HUGE_ISSUER]] as const) {
    test(`a JWKS ${mode === 'endless' ? 'without end' : 'of 4 MiB'} is refused after at most 64 KiB: the token is 401 within a second or two`, async (t_) => {
      server.mode = mode;
      const token = await idp.sign('ES256', { iss: issuer, customer: 'acme', scope: 'acl:read' });
      const startedAt = performance.now();

      const response = await probe(token);

      const seconds = (performance.now() - startedAt) / 1000;
      const [answer] = server.answersAt(`/${mode}`);
      await eventually(() => answer!.closedAt !== undefined && server.clientBytesRead(answer!) !== undefined, 10_000, 'the JWKS connection closed');
      t_.diagnostic(`401 after ${seconds.toFixed(3)} s; keyfleet read ${server.clientBytesRead(answer!)} bytes, the server wrote ${answer!.bytesWritten}`);
      assert.equal(response.statusCode, 401);
      assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED', error_msg: 'Token issuer keys could not be fetched' });
      assert.ok(seconds < 2, `took ${seconds} s`);
      assert.ok(server.clientBytesRead(answer!)! <= READ_BOUND, `read ${server.clientBytesRead(answer!)} bytes`);
    });
  }
});
