import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ensureActiveSigningKey, loadOwnKeySet } from './signing-keys.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';

declare module 'fastify' {
  interface FastifyInstance {
    tokenVerifier: TokenVerifier;
  }
}

/** The deployment's signing key, its public JWKS, and the token verifier that requireScopes uses. */
async function authPlugin(app: FastifyInstance): Promise<void> {
  await ensureActiveSigningKey(app.db, app.keyRing);
  const ownKeys = await loadOwnKeySet(app.db);
  app.decorate('tokenVerifier', createTokenVerifier(app.db, app.settings, ownKeys, app.log));
  app.decorateRequest('principal', undefined);

  // Documentation only: each key type has its own members (RFC 7517), sent as jose exports them.
  const Jwks = Type.Object({ keys: Type.Array(Type.Object({ kty: Type.String(), kid: Type.String(), alg: Type.String() }, { additionalProperties: true })) });
  const documentation = { responses: { 200: { description: 'The public keys of the deployment\'s own signing keys (RFC 7517)', content: { 'application/json': Jwks } } } };
  app.get('/.well-known/jwks.json', { config: { openapi: documentation }, schema: { operationId: 'getJwks', summary: 'Public keys that verify the deployment\'s own JWTs' } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return await ownKeys.jwks();
  });
}

export default fp(authPlugin, { name: 'keyfleet-auth' });
