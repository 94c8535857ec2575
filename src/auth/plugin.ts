import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { ensureActiveSigningKey, loadPublicJwks } from './signing-keys.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';

declare module 'fastify' {
  interface FastifyInstance {
    tokenVerifier: TokenVerifier;
  }
}

/** The deployment's signing key, its public JWKS, and the token verifier that requireScopes uses. */
async function authPlugin(app: FastifyInstance): Promise<void> {
  await ensureActiveSigningKey(app.db, app.masterKey);
  const publicJwks = await loadPublicJwks(app.db);
  app.decorate('tokenVerifier', createTokenVerifier(app.db, app.settings, publicJwks, app.log));
  app.decorateRequest('principal', undefined);

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return publicJwks;
  });
}

export default fp(authPlugin, { name: 'keyfleet-auth' });
