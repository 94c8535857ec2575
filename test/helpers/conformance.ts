import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

// A CommonJS module whose types declare an ES default export; at run time the import is the function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface DocumentedResponse {
  content?: Record<string, unknown>;
}

interface Document {
  paths: Record<string, Record<string, { responses: Record<string, DocumentedResponse> }>>;
}

const DOCUMENT_ID = 'https://keyfleet.test/openapi.json';

/** `/api/v1/acls/:id` or `/api/v1/acls/` → `/api/v1/acls/{id}`, `/api/v1/acls`, as the document writes paths. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1');
const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** What the answer broke of the document, or undefined when it keeps to it. */
type Check = (request: FastifyRequest, reply: FastifyReply, payload: unknown) => string | undefined;

function checkerOf(document: Document): Check {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (path: string, method: string, status: string, mediaType: string) => {
    const key = `${method} ${path} ${status} ${mediaType}`;
    let validate = validators.get(key);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/${pointer('paths', path, method, 'responses', status, 'content', mediaType, 'schema')}` });
      validators.set(key, validate);
    }
    return validate;
  };

  return (request, reply, payload) => {
    const url = request.routeOptions.url;
    const method = request.method.toLowerCase();
    if (url === undefined || method === 'head') return undefined;
    const path = openApiPath(url);
    const operation = document.paths[path]?.[method];
    // Not an operation: /docs, /openapi.json, the 405-only methods (x-methods-not-allowed).
    if (!operation) return undefined;
    const status = String(reply.statusCode);
    const response = operation.responses[status];
    const where = `${request.method} ${path} answered ${status}`;
    if (!response) return `${where}, a status the document does not declare (it declares ${Object.keys(operation.responses).join(', ')})`;
    const mediaType = String(reply.getHeader('content-type') ?? '').split(';')[0]!.trim();
    const body = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload.toString() : undefined;
    // Fastify sends no body with a 204 or 304 whatever the handler gave (`null` from a Type.Null() schema).
    const bodiless = status === '204' || status === '304';
    if (!response.content) return body && !bodiless ? `${where} with a body, where the document declares none` : undefined;
    if (!(mediaType in response.content)) return `${where} as ${mediaType || 'no media type'}, where the document declares ${Object.keys(response.content).join(', ')}`;
    // Streams (firmware files) are checked by status and media type only.
    if (body === undefined || !mediaType.endsWith('json')) return undefined;
    const validate = validatorOf(path, method, status, mediaType);
    if (validate(JSON.parse(body))) return undefined;
    return `${where} with a body that does not match the document: ${ajv.errorsText(validate.errors)} in ${body.slice(0, 300)}`;
  };
}

/**
 * Checks every answer of the app against its own OpenAPI document: an undeclared status, media
 * type or a body that does not match its schema is turned into a 500 that names the breach, so
 * the test whose request caused it fails (contract §9: the document is the contract).
 */
export function checkConformance(app: FastifyInstance, { routesAddedLaterAreTests = true } = {}): void {
  let check: Check | undefined;
  // Routes a test adds after the app is built (probes of a guard) are the test's own, not the API's.
  const testRoutes = new Set<string>();
  if (routesAddedLaterAreTests) {
    app.addHook('onRoute', (route) => {
      testRoutes.add(route.url);
    });
  }
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.url !== undefined && testRoutes.has(request.routeOptions.url)) return payload;
    // An instance without the API's document (the metrics listener of `keyfleet dispatch`) has nothing to keep to.
    if (typeof app.swagger !== 'function') return payload;
    check ??= checkerOf(app.swagger() as unknown as Document);
    const breach = check(request, reply, payload);
    if (breach === undefined) return payload;
    request.log.error({ breach }, 'answer outside the OpenAPI document');
    reply.code(500).type('application/json; charset=utf-8');
    return JSON.stringify({ error_code: 'OPENAPI_CONFORMANCE', error_msg: breach });
  });
}
