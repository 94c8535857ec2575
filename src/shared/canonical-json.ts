import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

// A CommonJS module whose types declare an ES default export; at run time the import is the function.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string | undefined;

/** RFC 8785 (JCS) canonical JSON text of a JSON value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON form');
  return text;
}

/** Lowercase hex SHA-256 of a text that is already canonical JSON. */
export function canonicalTextDigest(canonicalText: string): string {
  return createHash('sha256').update(canonicalText).digest('hex');
}

/** Lowercase hex SHA-256 of a value's canonical JSON: how asset list digests are made. */
export function canonicalDigest(value: unknown): string {
  return canonicalTextDigest(canonicalJson(value));
}
