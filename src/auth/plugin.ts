import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
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

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return await ownKeys.jwks();
  });
}

export default fp(authPlugin, { name: 'keyfleet-auth' });
