import { isUtf8 } from 'node:buffer';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, unsupportedMediaType } from './errors.ts';
import { renderFieldPath } from './validation.ts';

/** Deeper documents are refused: nothing keyfleet stores nests this far, and recursion over them could overflow the stack. */
export const MAX_JSON_DEPTH = 64;

/** How deeply arrays and objects nest in a JSON text (brackets inside strings do not count). */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c) i++;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (code === 0x5d || code === 0x7d) depth--;
  }
  return deepest;
}

/**
 * Where the first number of a parsed JSON value that is not finite is, or undefined when there
 * is none: JSON.parse reads 1e400 as Infinity (and JSON.stringify writes it back as null),
 * which no field can keep. Depth is bounded by MAX_JSON_DEPTH before parsing.
 */
export function nonFiniteNumberPath(value: unknown, path: (string | number)[] = []): (string | number)[] | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = nonFiniteNumberPath(value[index], [...path, index]);
      if (found) return found;
    }
    return undefined;
  }
  for (const key in value) {
    const found = nonFiniteNumberPath((value as Record<string, unknown>)[key], [...path, key]);
    if (found) return found;
  }
  return undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body as text, for routes that must keep part of it exactly as sent. */
    jsonText: string | undefined;
  }
}

const BYTE_ORDER_MARK = 0xfeff;

/**
 * The text without a leading byte-order mark. RFC 8259 §8.1 lets a parser ignore one, and
 * Windows tools write it; it is dropped here, once for every JSON body, so that the parsed
 * value and the text routes keep as sent (request.jsonText) start at the same character.
 * A mark anywhere else is bad JSON.
 */
export const withoutByteOrderMark = (text: string): string => (text.charCodeAt(0) === BYTE_ORDER_MARK ? text.slice(1) : text);

/** Media types whose bodies are JSON documents. */
export const JSON_MEDIA_TYPES = ['application/json', 'application/merge-patch+json'];

function charsetOf(request: FastifyRequest): string | undefined {
  return /;\s*charset="?([^";\s]+)"?/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
}

/**
 * JSON bodies must be UTF-8 (RFC 8259) and uncompressed; anything else is refused with a
 * 4xx that says so, instead of being decoded with replacement characters or read as bytes.
 * Prototype-poisoning keys (`__proto__`, `constructor.prototype`) are refused too, and so is a
 * number too large for a double (contract §16: a 400 naming the field, for every route at once).
 */
export function registerJsonBodies(app: FastifyInstance): void {
  // A callback, not an async function: every request passes here, bodies or not (a poll has
  // none), and an async hook costs each a promise and a microtask.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
      return done(unsupportedMediaType(`Content-Encoding ${encoding} is not supported; send the body uncompressed`) as unknown as FastifyError);
    }
    done(null, payload);
  });

  app.decorateRequest('jsonText', undefined);
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Fastify reads text/plain as a string by default: a JSON API answers it 415, not a 400 about the body's type.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(JSON_MEDIA_TYPES, { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    const charset = charsetOf(request);
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return done(unsupportedMediaType(`charset ${charset} is not supported; JSON bodies are UTF-8`));
    }
    // Clients that send `Content-Type: application/json` on every request (the DLock calls
    // of contract §0.5 do) send it on DELETE too, with nothing after it: that is no body, not bad JSON.
    if (body.length === 0 && request.method === 'DELETE') return done(null, undefined);
    if (!isUtf8(body)) return done(badRequest('body: not valid UTF-8'));
    const text = withoutByteOrderMark(body.toString('utf8'));
    if (jsonNestingDepth(text) > MAX_JSON_DEPTH) return done(badRequest(`body: nested deeper than ${MAX_JSON_DEPTH} levels`));
    request.jsonText = text;
    parseJson(request, text, (error, parsed) => {
      if (error) return done(error);
      const where = nonFiniteNumberPath(parsed);
      if (where) return done(badRequest(`${renderFieldPath('body', where)}: a number that cannot be kept exactly (non-finite)`));
      done(null, parsed);
    });
  });
}
