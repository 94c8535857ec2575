import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerCredential } from '../http/bearer.ts';
import { unauthorized } from '../http/errors.ts';
import { documentSecurity } from '../http/openapi.ts';
import { checkApiKey, findApiKey, type ApiKeyLookup, type ApiKeyOwner, type ApiKeyRow } from './api-keys.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key and customer that requireApiKey authenticated; set on DLock routes only. */
    apiKeyOwner: ApiKeyOwner | undefined;
    /** The row read with the key, with whatever the route's lookup read in the same statement. */
    apiKeyRow: ApiKeyRow | undefined;
  }
}

export const MISSING_KEY = 'Missing access token';
export const MALFORMED_KEY = 'Malformed access token';
export const INVALID_KEY = 'Access token invalid or revoked';

/**
 * onRequest hook of a DLock route (authentication before the body is read or anything is
 * validated): `Authorization: Bearer kf_live_…`. Sets request.apiKeyOwner and
 * request.apiKeyRow, or answers 401. `lookupFor` gives the key's lookup for a request, so that
 * a route can read its own row with the key in one statement. Routes that use it set
 * `config: { errorShape: 'dlock' }` so that the error handler renders `{status, msg}`.
 */
export function requireApiKeyReading<Row extends ApiKeyRow>(lookupFor: (request: FastifyRequest) => ApiKeyLookup<Row>) {
  return documentSecurity(
    async function requireApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
      const bearer = bearerCredential(request.headers.authorization);
      if (!bearer.ok) throw unauthorized(bearer.reason === 'missing' ? MISSING_KEY : MALFORMED_KEY);
      const result = await checkApiKey(request.server.db, bearer.credential, Date.now(), lookupFor(request));
      if (!result.ok) throw unauthorized(result.reason === 'malformed' ? MALFORMED_KEY : INVALID_KEY);
      request.apiKeyOwner = result.owner;
      request.actor = { kind: 'api_key', id: result.owner.keyId, name: `API key ${result.owner.keyId} of ${result.owner.customer}` };
      request.apiKeyRow = result.row;
    },
    { apiKey: [] },
  );
}

/** requireApiKey reading the key's row alone. */
export const requireApiKey = requireApiKeyReading((request) => findApiKey(request.server.db));

async function dlockAuthPlugin(app: FastifyInstance): Promise<void> {
  app.decorateRequest('apiKeyOwner', undefined);
  app.decorateRequest('apiKeyRow', undefined);
}

export default fp(dlockAuthPlugin, { name: 'keyfleet-dlock-auth' });
