import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { ErrorResponse } from './schemas.ts';

/** An OpenAPI security requirement: scheme name → scopes. */
export type SecurityRequirement = Record<'apiKey' | 'jwt' | 'deviceToken', string[]>;

const securityOfHandler = new WeakMap<object, Partial<SecurityRequirement>>();

/**
 * Marks an authentication hook (onRequest or preHandler) with the security requirement it enforces, so that the
 * document states each route's security from the guard the route really runs.
 */
export function documentSecurity<Handler extends object>(handler: Handler, requirement: Partial<SecurityRequirement>): Handler {
  securityOfHandler.set(handler, requirement);
  return handler;
}

const DlockError = Type.Object({ status: Type.Integer(), msg: Type.String() });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request: the message names the field and what is wrong',
  401: 'Missing, malformed, invalid, expired or revoked credentials',
  403: 'Valid credentials without the required scopes, or acting for another customer',
  404: 'Not found (also for a record of another customer)',
  413: 'Body too large',
  415: 'Body not UTF-8 JSON',
  429: 'Rate limit exceeded; see Retry-After',
};

/** The route's onRequest and preHandler hooks: where guards run. */
function hooksOf(route: RouteOptions): object[] {
  return [route.onRequest, route.preHandler].flatMap((hooks) => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]));
}

/** Operations grouped by capability, by path prefix; the rest are operations endpoints. */
function tagOf(url: string, devicePaths: string[]): string {
  if (devicePaths.some((prefix) => url.startsWith(prefix))) return 'OKM device protocol';
  if (url.startsWith('/api/v1/okms') || url.startsWith('/api/v1/pending-okms')) return 'OKM admin';
  if (url.startsWith('/api/v1/firmware')) return 'Firmware catalog';
  if (url.startsWith('/api/v1/acls')) return 'ACL';
  if (url.startsWith('/v1/')) return 'DLock';
  return 'Operations';
}

/** The route's schema as documented: its own, plus its tag, its security and the error responses it can give. */
function documentedSchema(route: RouteOptions, devicePaths: string[]): Record<string, unknown> {
  const schema = { ...(route.schema as Record<string, unknown> | undefined) };
  schema.tags ??= [tagOf(route.url, devicePaths)];
  const security = hooksOf(route)
    .map((handler) => securityOfHandler.get(handler))
    .find((requirement) => requirement !== undefined);
  const errorSchema: TSchema = route.config?.errorShape === 'dlock' ? DlockError : ErrorResponse;
  const statuses = [400, ...(security ? [401, 403] : []), 404, ...(route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH' ? [413, 415] : []), 429];
  const responses = { ...(schema.response as Record<string, unknown> | undefined) };
  for (const status of statuses) responses[status] ??= { description: ERROR_DESCRIPTIONS[status], ...errorSchema };
  return { ...schema, response: responses, ...(security ? { security: [security] } : {}) };
}

/**
 * OpenAPI 3.1 at /openapi.json, generated from the route schemas that validate requests, and
 * interactive docs at /docs. Register before the routes: the document lists the routes
 * registered after it.
 */
async function openApiPlugin(app: FastifyInstance): Promise<void> {
  const devicePaths = ['/embeddedv1/', `${app.settings.configPath}/`, `${app.settings.auditUrl}/`];
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'keyfleet',
        version: '0.1.0',
        description: 'OKM config protocol, OKM admin API, DLock key certificates and ACLs. Errors are `{error_code, error_msg}` (`{status, msg}` under /v1).',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'DLock API key `kf_live_…` (`keyfleet apikey create`)' },
          jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'JWT with the scopes listed per operation (`keyfleet token issue`); `admin` grants every scope' },
          deviceToken: { type: 'http', scheme: 'bearer', description: 'Per-OKM device token, when device tokens are required' },
        },
      },
    },
    transform: ({ schema, url, route }) => ({ schema: schema?.hide ? schema : (documentedSchema(route, devicePaths) as typeof schema), url }),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: false } });
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => reply.type('application/json; charset=utf-8').send(app.swagger()));
}

export default fp(openApiPlugin, { name: 'keyfleet-openapi' });
