/**
 * The parsed queries' prototype: it has no members and no prototype of its own. An object made
 * by `Object.create(null)` would inherit nothing either, but V8 keeps such an object as a hash
 * table from the start, where one with a prototype keeps its properties in fixed slots: the
 * poll's parameters, the same each time, are then stored and read without a hash lookup
 * (docs/adr/0109, its amendment).
 */
const NO_MEMBERS: object = Object.freeze(Object.create(null));

const QUESTION_MARK = 0x3f;

/**
 * The names of the last query read in one pass, in order, as its object holds them: V8's own
 * strings for them. A device sends the same names in the same order on every poll, so a name
 * equal to the one the last query had at its place is stored under that string. A name cut out
 * of the query is a new string, which V8 hashes and looks up in its table of names at the
 * store: about 500 instructions a name, 14 names a poll (docs/adr/0118).
 */
let lastNames: readonly string[] = [];

/**
 * The escaped values read in one pass, by their place in the query, and what each decodes to,
 * written together so that one is always the other's decoding: a value equal to the one kept at
 * its place is not decoded again. The URLs a device reports (configUrl, auditUrl) are the same
 * for a whole fleet and escaped; `decodeURIComponent`, a call into V8's runtime, cost about
 * 1.6 k instructions each (docs/adr/0118, its amendment). The first places only: what is kept is
 * bounded whatever the queries.
 */
const KEPT_VALUE_PLACES = 32;
const keptEscapedValues: string[] = [];
const keptDecodedValues: string[] = [];

/** `value` decoded (see decoded), through the one kept at its `place` when it is that one. */
function decodedValueAt(value: string, place: number): string | undefined {
  if (value === keptEscapedValues[place]) return keptDecodedValues[place];
  const decodedValue = decoded(value);
  if (decodedValue !== undefined && place < KEPT_VALUE_PLACES) {
    keptEscapedValues[place] = value;
    keptDecodedValues[place] = decodedValue;
  }
  return decodedValue;
}

type ParsedQuery = Record<string, string | string[]>;

/**
 * Fastify's query-string parser: the WHATWG form-urlencoded parsing of Node's URLSearchParams,
 * as an object that inherits no members (a parameter named `__proto__` or `toString` is a
 * parameter like any other), each value a string, or an array of them in order when the
 * parameter is repeated.
 * '+' is a space; each valid %XX escape is a byte of UTF-8, a byte sequence that is not UTF-8
 * decodes to U+FFFD, and an escape that is not valid stays as sent (docs/adr/0109).
 *
 * A well-formed query, each name once, is read here in one pass: the separators found with
 * `indexOf`, each at most once, and only a name or value holding a '%' or '+' decoded, by
 * `decodeURIComponent`. URLSearchParams looks for both characters in every name and value
 * once the query holds either: on the poll's query, 83 `indexOf` calls and about 20 k
 * instructions with what they call (docs/adr/0116). Any other query (a name repeated, an escape
 * `decodeURIComponent` refuses: not valid, or bytes that are not UTF-8; a lone surrogate) is
 * parsed by URLSearchParams itself, so the result is always its parsing; a property test holds
 * the two to the same answers.
 */
export function parseQueryString(query: string): ParsedQuery {
  const parameters: ParsedQuery = Object.create(NO_MEMBERS);
  const length = query.length;
  let start = query.charCodeAt(0) === QUESTION_MARK ? 1 : 0;
  if (start >= length) return parameters;
  if (!query.isWellFormed()) return parsedByUrlSearchParams(query);
  // The next of each character at or after `start` (the length when there is none), searched
  // again only once passed: the query is read once for each, however many pairs it has.
  let nextEquals = -1;
  let nextPercent = -1;
  let nextPlus = -1;
  let pairs = 0;
  while (start < length) {
    let end = query.indexOf('&', start);
    if (end === -1) end = length;
    if (end !== start) {
      if (nextEquals < start) nextEquals = positionOf(query, '=', start);
      if (nextPercent < start) nextPercent = positionOf(query, '%', start);
      if (nextPlus < start) nextPlus = positionOf(query, '+', start);
      const nameEnd = nextEquals < end ? nextEquals : end;
      let name = query.slice(start, nameEnd);
      // The same characters, so the same name; compared as strings (a `startsWith` at the
      // position, compiled, read the query a character at a time: about 600 instructions a name).
      const hint = lastNames[pairs];
      if (name === hint) name = hint;
      let value = nameEnd === end ? '' : query.slice(nameEnd + 1, end);
      if (nextPercent < end || nextPlus < end) {
        const decodedName = decoded(name);
        const decodedValue = decodedValueAt(value, pairs);
        if (decodedName === undefined || decodedValue === undefined) return parsedByUrlSearchParams(query);
        name = decodedName;
        value = decodedValue;
      }
      // Stored without first reading the name: for a name not stored yet that read is a generic
      // lookup that fails (docs/adr/0109, its second amendment).
      parameters[name] = value;
      pairs += 1;
    }
    start = end + 1;
  }
  // A repeated name holds only its last value, and there are fewer names than pairs: such a
  // query, which devices do not send, is parsed again with every value kept.
  const names = Object.keys(parameters);
  if (names.length !== pairs) return parsedByUrlSearchParams(query);
  lastNames = names;
  return parameters;
}

const positionOf = (query: string, character: string, from: number) => {
  const position = query.indexOf(character, from);
  return position === -1 ? query.length : position;
};

/** A name or value as the form-urlencoded parsing decodes it; undefined when `decodeURIComponent` refuses one of its escapes. */
function decoded(component: string): string | undefined {
  const spaced = component.includes('+') ? component.replaceAll('+', ' ') : component;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}

/** `query` as URLSearchParams parses it, a repeated name's values in an array, in order. */
function parsedByUrlSearchParams(query: string): ParsedQuery {
  const parameters: ParsedQuery = Object.create(NO_MEMBERS);
  new URLSearchParams(query).forEach((value, name) => {
    const earlier = parameters[name];
    if (earlier === undefined) parameters[name] = value;
    else if (typeof earlier === 'string') parameters[name] = [earlier, value];
    else earlier.push(value);
  });
  return parameters;
}
