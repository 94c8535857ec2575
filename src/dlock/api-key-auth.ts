import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../http/errors.ts';
import { documentSecurity } from '../http/openapi.ts';
import { checkApiKey, type ApiKeyOwner } from './api-keys.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The key and customer that requireApiKey authenticated; set on DLock routes only. */
    apiKeyOwner: ApiKeyOwner | undefined;
  }
}

export const MISSING_KEY = 'Missing access token';
export const MALFORMED_KEY = 'Malformed access token';
export const INVALID_KEY = 'Access token invalid or revoked';

/**
 * preHandler of the DLock routes: `Authorization: Bearer kf_live_…`. Sets request.apiKeyOwner,
 * or answers 401. Routes that use it set `config: { errorShape: 'dlock' }` so that the error
 * handler renders `{status, msg}`.
 */
export const requireApiKey = documentSecurity(async function requireApiKey(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  const header = request.headers.authorization;
  if (header === undefined || header.trim() === '') throw unauthorized(MISSING_KEY);
  const match = /^Bearer +(\S+) *$/i.exec(header);
  if (!match) throw unauthorized(MALFORMED_KEY);
  const result = await checkApiKey(request.server.db, match[1]!);
  if (!result.ok) throw unauthorized(result.reason === 'malformed' ? MALFORMED_KEY : INVALID_KEY);
  request.apiKeyOwner = result.owner;
}, { apiKey: [] });

async function dlockAuthPlugin(app: FastifyInstance): Promise<void> {
  app.decorateRequest('apiKeyOwner', undefined);
}

export default fp(dlockAuthPlugin, { name: 'keyfleet-dlock-auth' });
