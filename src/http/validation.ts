import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { FREE_TEXT_PATTERN } from './schemas.ts';

function createAjv(coerceTypes: boolean) {
  const ajv = new Ajv.default({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

// Bodies are JSON and must have the declared types; query strings and path parameters are
// text and are coerced ("2" → 2).
const bodyAjv = createAjv(false);
const textAjv = createAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);

/** ["users", 3, "permissions"] → "users[3].permissions"; the part ("body", "query"...) when there are none. */
export function renderFieldPath(part: string, segments: readonly (string | number)[]): string {
  let rendered = part === 'body' ? '' : part;
  for (const segment of segments) {
    rendered += typeof segment === 'number' || /^\d+$/.test(segment) ? `[${segment}]` : rendered === '' ? segment : `.${segment}`;
  }
  return rendered || part;
}

/** "/users/3/permissions" → "users[3].permissions" */
function fieldPath(part: string, instancePath: string): string {
  return renderFieldPath(part, instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')));
}

/** One sentence naming the offending field, for the 400 body. */
export function describeValidationError(part: string, error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const where = fieldPath(part, error.instancePath);
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where === part ? '' : `${where}.`}${String(params.additionalProperty)}: unknown field`;
    case 'required':
      return `${where === part ? '' : `${where}.`}${String(params.missingProperty)}: required`;
    case 'enum':
      return `${where}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `${where}: must be ${JSON.stringify(params.allowedValue)}`;
    case 'pattern':
      if (params.pattern === FREE_TEXT_PATTERN) return `${where}: must not contain control characters or unpaired surrogates`;
      return `${where}: ${error.message ?? 'is invalid'}`;
    default:
      return `${where}: ${error.message ?? 'is invalid'}`;
  }
}
