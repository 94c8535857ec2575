import { createHmac } from 'node:crypto';
import fp from 'fastify-plugin';
import fastifyCookie from '@fastify/cookie';
import createCsrfTokens from '@fastify/csrf';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { tokenRevocations } from './api-tokens.ts';
import { createOidcClient } from './oidc.ts';
import oidcRoutes from './oidc-routes.ts';
import peopleRoutes from './people-routes.ts';
import { currentBindings } from './role-bindings.ts';
import { cookieOf, sessionCheck, sessionCookieName } from './sessions.ts';
import { ensureActiveSigningKey, loadOwnKeySet } from './signing-keys.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';

declare module 'fastify' {
  interface FastifyInstance {
    tokenVerifier: TokenVerifier;
  }
}

/**
 * The anti-CSRF secret of a session: derived from the cookie's secret, so that each session has
 * its own and nothing more is stored; @fastify/csrf makes and checks the tokens.
 */
const csrfSecretOf = (sessionSecret: string) => createHmac('sha256', sessionSecret).update('keyfleet anti-CSRF').digest('base64url');

/**
 * Who a request is: the deployment's signing key and public JWKS, the token verifier, and
 * people signed in through the OpenID Provider with their sessions (contract §17).
 */
async function authPlugin(app: FastifyInstance): Promise<void> {
  await ensureActiveSigningKey(app.db, app.keyRing);
  const ownKeys = await loadOwnKeySet(app.db);
  app.decorate('tokenVerifier', createTokenVerifier(app.db, app.settings, ownKeys, app.log, tokenRevocations(app.db, { clockToleranceMs: app.settings.jwtClockToleranceSeconds * 1000 })));
  app.decorateRequest('principal', undefined);

  const csrf = createCsrfTokens();
  const sessionCookie = sessionCookieName(app.settings);
  const sessionSecretOf = (request: FastifyRequest) => cookieOf(request, sessionCookie);
  const csrfTokenValid = (request: FastifyRequest) => {
    const secret = sessionSecretOf(request);
    const token = request.headers['x-csrf-token'];
    return secret !== undefined && typeof token === 'string' && csrf.verify(csrfSecretOf(secret), token);
  };
  const csrfTokenFor = (request: FastifyRequest) => {
    const secret = sessionSecretOf(request);
    return secret !== undefined && request.principal?.actor.kind === 'person' ? csrf.create(csrfSecretOf(secret)) : undefined;
  };
  const oidc = app.settings.oidc && createOidcClient(app.settings.oidc, app.settings.jwtClockToleranceSeconds);
  const bindings = currentBindings(app.db);
  const sessions = sessionCheck({ db: app.db, keyRing: app.keyRing, settings: app.settings, bindings, oidc, csrfTokenValid, log: app.log });
  app.decorate('credentialCheck', sessions);
  // @fastify/cookie sets the cookies of the sign-in routes; in their own context, so that its hooks run on those routes only, never on a poll.
  await app.register(async (signIn) => {
    await signIn.register(fastifyCookie, { hook: false });
    await signIn.register(oidcRoutes, { oidc, bindings, sessions });
  });
  await app.register(peopleRoutes, { csrfTokenFor });

  // Documentation only: each key type has its own members (RFC 7517), sent as jose exports them.
  const Jwks = Type.Object({ keys: Type.Array(Type.Object({ kty: Type.String(), kid: Type.String(), alg: Type.String() }, { additionalProperties: true })) });
  const documentation = { responses: { 200: { description: 'The public keys of the deployment\'s own signing keys (RFC 7517)', content: { 'application/json': Jwks } } } };
  app.get('/.well-known/jwks.json', { config: { openapi: documentation }, schema: { operationId: 'getJwks', summary: 'Public keys that verify the deployment\'s own JWTs' } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return await ownKeys.jwks();
  });
}

export default fp(authPlugin, { name: 'keyfleet-auth' });
