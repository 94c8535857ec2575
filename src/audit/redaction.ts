/**
 * What an audit entry never holds (contract §18: "secrets and key material redacted"). A
 * member with one of these names, at any depth of `before` or `after`, is replaced by a marker,
 * whatever its value: PIN hashes of ACL users (also in an OKM's user assets), secrets of webhook
 * endpoints and API keys, device and API tokens, refresh tokens, private keys, and any sealed
 * column. The list is documented in docs/audit-trail.md; a change that adds a secret member to
 * a recorded shape adds its name here.
 */
export const REDACTED_MEMBERS: ReadonlySet<string> = new Set([
  'pin_hash',
  'secret',
  'secret_hash',
  'previous_secret',
  'token',
  'device_token',
  'token_hash',
  'refresh_token',
  'client_secret',
  'password',
  'private_key',
  'private_jwk',
]);

/** Members named …_sealed hold ciphertext under the data keys: key material all the same. */
const isRedacted = (member: string) => REDACTED_MEMBERS.has(member) || member.endsWith('_sealed');

/** What a redacted value reads as; after a change, whether it changed is kept (a PIN reset is worth knowing), never the value. */
export const REDACTED = '[redacted]';
export const REDACTED_CHANGED = '[redacted: changed]';

type Json = null | boolean | number | string | Json[] | { [member: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A value as JSON.stringify would write it, read without writing and parsing it back: toJSON
 * applied (a date), boxed primitives unboxed, non-finite numbers null, undefined, functions and
 * symbols gone from objects and null in arrays; so that what is hashed is what is stored. A
 * test holds it equal to the JSON.stringify round trip.
 */
function asJson(value: unknown): Json | undefined {
  if (value === null) return null;
  if (typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') return asJson((value as { toJSON(): unknown }).toJSON());
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return asJson(value.valueOf());
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // -0 is written 0.
      return Number.isFinite(value) ? value + 0 : null;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object':
      break;
    default:
      return undefined;
  }
  // Array.from, not map: a hole is written null too.
  if (Array.isArray(value)) return Array.from(value as unknown[], (item) => asJson(item) ?? null);
  const json: Record<string, Json> = {};
  for (const [member, item] of Object.entries(value as Record<string, unknown>)) {
    const itemJson = asJson(item);
    if (itemJson !== undefined) json[member] = itemJson;
  }
  return json;
}

/**
 * Redacts `before` and `after` of one change together: a redacted member reads REDACTED, and in
 * `after` REDACTED_CHANGED where the value at the same place before was different (or absent).
 * Arrays are compared place by place, so a shape that keys its items (an ACL's users by
 * user_id) tells a changed PIN from a moved one.
 */
export function redactChange(before: unknown, after: unknown): { before: Json | undefined; after: Json | undefined } {
  const was = asJson(before);
  return { before: redactValue(was, undefined, false), after: redactValue(asJson(after), was, before !== undefined) };
}

function redactValue(value: Json | undefined, previous: Json | undefined, compare: boolean): Json | undefined {
  if (Array.isArray(value)) return value.map((item, index) => redactValue(item, Array.isArray(previous) ? previous[index] : undefined, compare)!);
  if (!isObject(value)) return value;
  const redacted: Record<string, Json> = {};
  for (const [member, item] of Object.entries(value as Record<string, Json>)) {
    const was = isObject(previous) ? (previous as Record<string, Json>)[member] : undefined;
    if (isRedacted(member) && item !== null) redacted[member] = compare && JSON.stringify(was) !== JSON.stringify(item) ? REDACTED_CHANGED : REDACTED;
    else redacted[member] = redactValue(item, was, compare)!;
  }
  return redacted;
}
