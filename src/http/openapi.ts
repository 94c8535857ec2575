import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { canonicalJson } from '../shared/canonical-json.ts';
import { DlockError, ErrorResponse, Pagination } from './schemas.ts';

/** An OpenAPI security requirement: scheme name → scopes. */
export type SecurityRequirement = Record<'apiKey' | 'jwt' | 'deviceToken', string[]>;

/** A response the route's own schema does not declare, as the document shows it: media type → body schema; none for no body. */
export interface DocumentedResponse {
  description: string;
  content?: Record<string, TSchema>;
  headers?: Record<string, TSchema>;
}

/**
 * What the document states about a route beyond the schemas Fastify validates and serializes
 * with: documentation only, never enforced. The device protocol is read leniently (contract §4: a
 * malformed parameter is unknown, never a 4xx), and some answers are streams or texts.
 */
export interface OperationDocumentation {
  /** Query parameters the handler reads itself. */
  querystring?: TSchema;
  /** Request headers the handler reads itself. */
  headers?: TSchema;
  /** The request body the handler reads itself, by media type. */
  body?: { description: string; content: Record<string, TSchema> };
  /** Responses beyond the route's schema, by status. */
  responses?: Record<number, DocumentedResponse>;
  /** Error statuses beyond the ones every operation of its kind can answer. */
  errors?: number[];
  /** Its success answers carry an ETag (RFC 9110): a read of a resource whose writes honour If-Match. Such writes are found by their If-Match header. */
  etag?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    openapi?: OperationDocumentation;
    /** The route only answers 405 with this Allow: not an operation, listed under `x-methods-not-allowed`. */
    methodNotAllowed?: string;
  }
}

const securityOfHandler = new WeakMap<object, Partial<SecurityRequirement>>();

/**
 * Marks an authentication hook (onRequest or preHandler) with the security requirement it enforces, so that the
 * document states each route's security from the guard the route really runs.
 */
export function documentSecurity<Handler extends object>(handler: Handler, requirement: Partial<SecurityRequirement>): Handler {
  securityOfHandler.set(handler, requirement);
  return handler;
}

/** The route options of a route that only answers 405: hidden from the operations, listed with its Allow. */
export const methodNotAllowedRoute = (allow: string) => ({ schema: { hide: true }, config: { methodNotAllowed: allow } }) as const;

/** Internal requirement names → the scheme names the document uses. */
const SCHEME_NAMES: Record<keyof SecurityRequirement, string> = { apiKey: 'dlockApiKey', jwt: 'jwt', deviceToken: 'deviceToken' };

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request: the message names the field and what is wrong',
  401: 'Missing, malformed, invalid, expired or revoked credentials (with `WWW-Authenticate: Bearer error="invalid_token"`)',
  403: 'Valid credentials without the required scopes, or acting for another customer',
  404: 'Not found (also for a record of another customer)',
  409: 'Conflict: the record exists already, or another record is in the way; the message says which',
  412: 'Precondition failed: If-Match names another version than the current one; the body holds the current version (`current`) and the ETag header its tag',
  413: 'Body too large',
  415: 'Unsupported media type: the body must be UTF-8 JSON (`application/json`), uncompressed',
  416: 'Range not satisfiable',
  429: 'Rate limit exceeded; see Retry-After',
  503: 'Database unavailable, the server is shutting down, or it does not hold the current master key; retry after Retry-After seconds',
};

const SUCCESS_DESCRIPTIONS: Record<number, string> = { 200: 'OK', 201: 'Created', 204: 'Done; no body' };

const RETRY_AFTER = { 'retry-after': Type.String({ description: 'seconds to wait' }) };

/** A cursor-paged list's answer (src/http/cursor-paging.ts) carries the next page's Link. */
const isCursorPage = (response: unknown) => typeof response === 'object' && response !== null && 'next_cursor' in ((response as { properties?: object }).properties ?? {});
const NEXT_PAGE_LINK = { link: Type.String({ description: '`<URL of the next page>; rel="next"` (RFC 8288), when next_cursor is not null' }) };
const ETAG = { etag: Type.String({ description: 'strong validator of the version answered (RFC 9110 §8.8.3): what a later write sends as If-Match' }) };

/** An operation whose success answers carry the resource's ETag: declared so, or a write taking If-Match. */
function answersWithEtag(schema: Record<string, unknown>, documentation: OperationDocumentation): boolean {
  const headers = schema.headers as { properties?: Record<string, unknown> } | undefined;
  return documentation.etag === true || headers?.properties?.['if-match'] !== undefined;
}

/** The route's onRequest and preHandler hooks: where guards run. */
function hooksOf(route: RouteOptions): object[] {
  return [route.onRequest, route.preHandler].flatMap((hooks) => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]));
}

/** Operations grouped by capability, by path prefix; the rest are operations endpoints. */
function tagOf(url: string, devicePaths: string[]): string {
  if (devicePaths.some((prefix) => url.startsWith(prefix))) return 'OKM device protocol';
  if (url.startsWith('/api/v1/okms') || url.startsWith('/api/v1/pending-okms')) return 'OKM admin';
  if (url.startsWith('/api/v1/firmware')) return 'Firmware catalog';
  if (url.startsWith('/api/v1/acls') || url.startsWith('/api/v1/acl-summaries')) return 'ACL';
  if (url.startsWith('/v1/')) return 'DLock';
  return 'Operations';
}

const isWrite = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE';
// DELETE too: Fastify reads a body on DELETE, so a body of an unknown type or too large is refused there as well.
const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE';

/** A response in the form @fastify/swagger turns into an OpenAPI response object. */
function responseObject({ description, content, headers }: DocumentedResponse): Record<string, unknown> {
  if (content === undefined) return { description, type: 'null', ...(headers ? { headers } : {}) };
  return { description, content: Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema }])), ...(headers ? { headers } : {}) };
}

/** The route's schema as documented: its own, plus its tag, its security and every status it can answer. */
function documentedSchema(route: RouteOptions, devicePaths: string[], tokenCheckedPaths: string[], deviceTokensRequired: boolean): Record<string, unknown> {
  const schema = { ...(route.schema as Record<string, unknown> | undefined) };
  const documentation = route.config?.openapi ?? {};
  const method = String(route.method);
  schema.tags ??= [tagOf(route.url, devicePaths)];
  const guard = hooksOf(route)
    .map((handler) => securityOfHandler.get(handler))
    .find((requirement) => requirement !== undefined);
  const requirement = guard && Object.fromEntries(Object.entries(guard).map(([name, scopes]) => [SCHEME_NAMES[name as keyof SecurityRequirement], scopes]));
  const isDeviceRoute = tokenCheckedPaths.some((prefix) => route.url.startsWith(prefix));
  // The device token is checked only when the deployment requires it; otherwise a token sent is ignored.
  const security = requirement ? [requirement] : isDeviceRoute && !deviceTokensRequired ? [{}, { deviceToken: [] }] : [];

  const errorSchema: TSchema = route.config?.errorShape === 'dlock' ? DlockError : ErrorResponse;
  const secured = security.some((entry) => Object.keys(entry).some((name) => name !== 'deviceToken'));
  const statuses = new Set([
    400,
    ...(secured ? [401, 403] : requirement ? [401] : []),
    404,
    ...(isWrite(method) && route.url.startsWith('/api/') && !isDeviceRoute ? [409] : []),
    ...(hasBody(method) ? [413, 415] : []),
    429,
    503,
    ...(documentation.errors ?? []),
  ]);
  // The route's `4xx` entry serializes its errors; the document names each status instead (generators read `4XX` poorly).
  const { '4xx': _wildcard, ...ownResponses } = (schema.response as Record<string, unknown> | undefined) ?? {};
  const etagged = answersWithEtag(schema, documentation);
  const responses: Record<string, unknown> = Object.fromEntries(
    Object.entries(ownResponses).map(([status, response]) => [
      status,
      {
        'x-response-description': SUCCESS_DESCRIPTIONS[Number(status)] ?? ERROR_DESCRIPTIONS[Number(status)] ?? 'Success',
        ...(isCursorPage(response) ? { headers: NEXT_PAGE_LINK } : {}),
        ...(etagged && (Number(status) === 200 || Number(status) === 201 || Number(status) === 412) ? { headers: ETAG } : {}),
        ...(response as object),
      },
    ]),
  );
  for (const [status, response] of Object.entries(documentation.responses ?? {})) responses[status] ??= responseObject(response);
  for (const status of [...statuses].sort()) {
    responses[status] ??= responseObject({
      description: ERROR_DESCRIPTIONS[status] ?? `Error ${status}`,
      content: { 'application/json': errorSchema },
      ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
    });
  }
  return {
    ...schema,
    ...(documentation.querystring ? { querystring: documentation.querystring } : {}),
    ...(documentation.headers ? { headers: documentation.headers } : {}),
    ...(documentation.body ? { body: { description: documentation.body.description, content: Object.fromEntries(Object.entries(documentation.body.content).map(([type, body]) => [type, { schema: body }])) } } : {}),
    response: responses,
    security,
  };
}

/**
 * A schema as the document prints it: plain JSON (no TypeBox symbols), with `const` as a
 * one-value `enum` and a record's `patternProperties` as `additionalProperties`, as
 * @fastify/swagger writes them.
 */
function asPrinted(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asPrinted);
  if (node === null || typeof node !== 'object') return node;
  const { const: constant, patternProperties, ...rest } = node as Record<string, unknown>;
  const printed = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, asPrinted(value)]));
  if (constant !== undefined) printed.enum = [constant];
  const anyProperty = (patternProperties as Record<string, unknown> | undefined)?.['^.*$'];
  if (anyProperty !== undefined) printed.additionalProperties = asPrinted(anyProperty);
  else if (patternProperties !== undefined) printed.patternProperties = asPrinted(patternProperties);
  return printed;
}

/**
 * The schemas the document names under `components.schemas`, by name: wherever a route's
 * schema is one of these (by structure), the document refers to it by name, so that a
 * generated client has one type for it. Request and response schemas stay plain TypeBox
 * objects: Fastify validates and serializes with them unchanged.
 */
export type ComponentSchemas = Record<string, TSchema>;

/** The shapes this layer defines itself (the error bodies, a numbered page's pagination): named first in every document. */
const HTTP_COMPONENTS: ComponentSchemas = { Error: ErrorResponse, DlockError, Pagination };

/**
 * Replaces every schema of the document that is one of the named component schemas with a
 * `$ref` to it, so that generated clients have one type per shared schema (OkmRecord, Acl…).
 */
function referenceComponents(document: Record<string, unknown>, componentSchemas: ComponentSchemas): void {
  const printed = Object.entries(componentSchemas).map(([name, schema]) => [name, asPrinted(JSON.parse(JSON.stringify(schema)))] as const);
  const byJson = new Map(printed.map(([name, schema]) => [canonicalJson(schema), name]));
  const replace = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item) => replace(item, false));
    if (node === null || typeof node !== 'object') return node;
    const name = root ? undefined : byJson.get(canonicalJson(asPrinted(node)));
    if (name !== undefined) return { $ref: `#/components/schemas/${name}` };
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, replace(value, false)]));
  };
  document.paths = replace(document.paths, false);
  const components = document.components as Record<string, unknown>;
  components.schemas = Object.fromEntries(printed.map(([name, schema]) => [name, replace(schema, true)]));
}

export interface OpenApiOptions {
  /** The capabilities' shared schemas, named in the document after the error bodies; the app lists them. */
  components: ComponentSchemas;
}

/**
 * OpenAPI 3.1 at /openapi.json, generated from the route schemas that validate requests, and
 * interactive docs at /docs. Register before the routes: the document lists the routes
 * registered after it.
 */
async function openApiPlugin(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  const componentSchemas: ComponentSchemas = { ...HTTP_COMPONENTS, ...options.components };
  const tokenCheckedPaths = [`${app.settings.configPath}/`, `${app.settings.auditUrl}/`];
  const devicePaths = ['/embeddedv1/', ...tokenCheckedPaths];
  const deviceTokensRequired = app.settings.okmDeviceTokens === 'required';
  const methodsNotAllowed: { method: string; path: string; allow: string }[] = [];
  app.addHook('onRoute', (route) => {
    const allow = route.config?.methodNotAllowed;
    if (allow === undefined) return;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1');
    for (const method of [route.method].flat()) if (method !== 'HEAD') methodsNotAllowed.push({ method, path, allow });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'keyfleet',
        version: '0.1.0',
        description: [
          'OKM config protocol, OKM admin API, DLock key certificates, firmware catalog and ACLs.',
          'Errors are `{error_code, error_msg}` (`{status, msg}` under /v1).',
          'A method a resource does not have answers 405 with `Allow` (listed under `x-methods-not-allowed`); unknown routes answer 404.',
        ].join(' '),
        license: { name: 'Proprietary', identifier: 'LicenseRef-keyfleet' },
      },
      servers: [{ url: '/', description: 'This keyfleet server' }],
      components: {
        securitySchemes: {
          dlockApiKey: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'kf_live_…',
            description: 'DLock API key `kf_live_…` of one customer (`keyfleet apikey create`); not a JWT',
          },
          jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'JWT with the scopes listed per operation (`keyfleet token issue`); `admin` grants every scope' },
          deviceToken: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'kf_okm_…',
            description: deviceTokensRequired
              ? 'Per-OKM device token (`keyfleet okm token`): required on the device routes of this deployment'
              : 'Per-OKM device token (`keyfleet okm token`): this deployment does not require it (OKM_DEVICE_TOKENS=off) and ignores it',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => ({
      schema: schema?.hide ? schema : (documentedSchema(route, devicePaths, tokenCheckedPaths, deviceTokensRequired) as typeof schema),
      url,
    }),
    transformObject: (documentObject) => {
      const document = ('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject) as Record<string, unknown>;
      referenceComponents(document, componentSchemas);
      document['x-methods-not-allowed'] = methodsNotAllowed;
      return document;
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: false } });
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => reply.type('application/json; charset=utf-8').send(app.swagger()));
}

export default fp(openApiPlugin, { name: 'keyfleet-openapi' });
