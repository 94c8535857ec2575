/**
 * The parsed queries' prototype: it has no members and no prototype of its own. An object made
 * by `Object.create(null)` would inherit nothing either, but V8 keeps such an object as a hash
 * table from the start, where one with a prototype keeps its properties in fixed slots: the
 * poll's parameters, the same each time, are then stored and read without a hash lookup
 * (docs/adr/0109, its amendment).
 */
const NO_MEMBERS: object = Object.freeze(Object.create(null));

/**
 * Fastify's query-string parser: the WHATWG form-urlencoded parsing of Node's URLSearchParams,
 * as an object that inherits no members (a parameter named `__proto__` or `toString` is a
 * parameter like any other), each value a string, or an array of them in order when the
 * parameter is repeated.
 * '+' is a space; each valid %XX escape is a byte of UTF-8, a byte sequence that is not UTF-8
 * decodes to U+FFFD, and an escape that is not valid stays as sent (docs/adr/0109).
 *
 * Fastify's default (fast-querystring) scans the query a character at a time in JavaScript:
 * on the bench's 420-character poll query its own functions counted about 9 k instructions a
 * poll more than these (callgrind, by function, in both orders of a pair; docs/adr/0109).
 */
export function parseQueryString(query: string): Record<string, string | string[]> {
  const parameters: Record<string, string | string[]> = Object.create(NO_MEMBERS);
  if (query.length === 0) return parameters;
  const pairs = new URLSearchParams(query);
  // Each value stored without first reading its name, which for a name not stored yet was a
  // generic lookup that failed (a poll's 14 parameters, about 9 k instructions). A repeated name
  // then holds only its last value, and there are fewer names than pairs: such a query, which
  // devices do not send, is read again, with every value kept.
  pairs.forEach((value, name) => {
    parameters[name] = value;
  });
  return Object.keys(parameters).length === pairs.size ? parameters : withRepeatedValues(pairs);
}

/** The parameters of `pairs`, a repeated name's values in an array, in order. */
function withRepeatedValues(pairs: URLSearchParams): Record<string, string | string[]> {
  const parameters: Record<string, string | string[]> = Object.create(NO_MEMBERS);
  pairs.forEach((value, name) => {
    const earlier = parameters[name];
    if (earlier === undefined) parameters[name] = value;
    else if (typeof earlier === 'string') parameters[name] = [earlier, value];
    else earlier.push(value);
  });
  return parameters;
}
