import type { FastifySerializerCompiler } from 'fastify';
import { Type, type TSchema, type TUnsafe } from 'typebox';
import { JsonText } from '../shared/raw-json.ts';

/** An object JSON.stringify writes member by member: a plain one, without toJSON. */
const isPlainObject = (value: object) => {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return (prototype === Object.prototype || prototype === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
};

/**
 * JSON of an answer in which a JsonText stands for JSON kept as sent: it is written as its own
 * text, byte for byte. Everything else is written as JSON.stringify writes it (undefined members
 * left out, undefined array items as null, toJSON honoured).
 */
export function stringifyWithJsonTexts(value: unknown): string {
  if (value instanceof JsonText) return value.text;
  if (Array.isArray(value)) return `[${value.map((item: unknown) => (item === undefined ? 'null' : stringifyWithJsonTexts(item))).join(',')}]`;
  if (typeof value === 'object' && value !== null && isPlainObject(value)) {
    const members: string[] = [];
    for (const [name, member] of Object.entries(value)) {
      if (member !== undefined && typeof member !== 'function') members.push(`${JSON.stringify(name)}:${stringifyWithJsonTexts(member)}`);
    }
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Route options of a route whose answers hold JsonText values. Fastify's schema-compiled
 * serializer would write such a value as an object of its own; the route's response schemas
 * still document the answers (and the OpenAPI document), the JSON is written here.
 */
export const WRITES_JSON_TEXTS: { serializerCompiler: FastifySerializerCompiler<TSchema> } = {
  serializerCompiler: () => stringifyWithJsonTexts,
};

/** A response member that holds JSON kept as sent: documented by `schema`, a JsonText in code. */
export const AsSent = (schema: TSchema): TUnsafe<JsonText> => Type.Unsafe<JsonText>(schema);
