import type { FastifyInstance } from 'fastify';

/** The part of a JSON Schema (as the OpenAPI document prints TypeBox schemas) the reliability suite reads. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  pattern?: string;
}

export interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  required?: boolean;
  schema: JsonSchema;
}

/** One method of one path of the OpenAPI document. */
export interface Operation {
  method: string;
  /** OpenAPI form: `/v1/dlock/{serial}`. */
  path: string;
  /** `undefined` when the document declares no security: a public operation. */
  security: Record<string, string[]>[] | undefined;
  parameters: Parameter[];
  /** Media type → schema of the request body. */
  requestBody: Record<string, JsonSchema>;
  summary: string;
}

interface OpenApiOperation {
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: JsonSchema }> };
  summary?: string;
}

/** No credential needed: no requirement, an empty one (`{}`: a credential is optional), or only the per-OKM device token. */
export const isPublic = (operation: Operation) =>
  operation.security === undefined ||
  operation.security.length === 0 ||
  operation.security.some((requirement) => Object.keys(requirement).length === 0) ||
  operation.security.every((requirement) => Object.keys(requirement).every((scheme) => scheme === 'deviceToken'));

/** Every operation of the app's own OpenAPI document (GET /openapi.json), so that a new route is covered without editing the suite. */
export async function operationsOf(app: FastifyInstance): Promise<Operation[]> {
  const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, OpenApiOperation>> };
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operations.push({
        method: method.toUpperCase(),
        path,
        security: operation.security,
        parameters: operation.parameters ?? [],
        requestBody: Object.fromEntries(Object.entries(operation.requestBody?.content ?? {}).map(([type, media]) => [type, media.schema ?? {}])),
        summary: operation.summary ?? '',
      });
    }
  }
  return operations;
}

export const operationName = (operation: Operation) => `${operation.method} ${operation.path}`;

/** A method a resource does not have: not an operation of the document, listed under `x-methods-not-allowed`; it answers 405 with Allow. */
export interface MethodNotAllowed {
  method: string;
  path: string;
  allow: string;
}

/** The methods the document lists as answering only 405, as operations (no security, no body), so that the suites can call them. */
export async function methodsNotAllowedOf(app: FastifyInstance): Promise<Operation[]> {
  const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { 'x-methods-not-allowed': MethodNotAllowed[] };
  return document['x-methods-not-allowed'].map(({ method, path }) => ({
    method,
    path,
    security: undefined,
    parameters: [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({ in: 'path' as const, name: name!, required: true, schema: { type: 'string' } })),
    requestBody: {},
    summary: '',
  }));
}

export const pathParameters = (operation: Operation) => operation.parameters.filter((parameter) => parameter.in === 'path');
export const queryParameters = (operation: Operation) => operation.parameters.filter((parameter) => parameter.in === 'query');

export const jwtScopesOf = (operation: Operation) => operation.security?.find((requirement) => 'jwt' in requirement)?.jwt;
export const usesApiKey = (operation: Operation) => operation.security?.some((requirement) => 'dlockApiKey' in requirement) ?? false;

/** The URL of an operation with its path parameters set (percent-encoded) and an optional query string. */
export function urlOf(operation: Operation, values: Record<string, string>, query: Record<string, string> = {}): string {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${operationName(operation)}: no value for path parameter ${name}`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams(query).toString();
  return search === '' ? path : `${path}?${search}`;
}
