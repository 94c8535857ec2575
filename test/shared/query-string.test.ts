import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseQueryString } from '../../src/shared/query-string.ts';

/** Parameters as a client would send them: each value, or each of a repeated parameter's values, encoded by encodeURIComponent. */
const encode = (parameters: readonly (readonly [string, readonly string[]])[]) =>
  parameters.flatMap(([name, values]) => values.map((value) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)).join('&');

test('parameters encoded by a client come back as sent: one value a string, a repeated parameter its values in order', () => {
  const names = fc.uniqueArray(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), { maxLength: 8 });
  fc.assert(
    fc.property(
      names.chain((unique) => fc.tuple(...unique.map((name) => fc.tuple(fc.constant(name), fc.array(fc.string({ unit: 'grapheme', maxLength: 20 }), { minLength: 1, maxLength: 3 }))))),
      (parameters) => {
        const parsed = parseQueryString(encode(parameters));
        assert.deepEqual({ ...parsed }, Object.fromEntries(parameters.map(([name, values]) => [name, values.length === 1 ? values[0]! : [...values]])));
      },
    ),
  );
});

test('a name repeated anywhere in the query has all its values, in the order sent, and the other names keep theirs', () => {
  const pair = fc.tuple(fc.constantFrom('a', 'b', 'kasFirmware', '__proto__', ''), fc.string({ maxLength: 6 }));
  fc.assert(
    fc.property(fc.array(pair, { maxLength: 12 }), (pairs) => {
      const expected: Record<string, string | string[]> = {};
      for (const [name, value] of pairs) {
        const earlier = Object.hasOwn(expected, name) ? expected[name] : undefined;
        Object.defineProperty(expected, name, { value: earlier === undefined ? value : [earlier, value].flat(), enumerable: true, writable: true, configurable: true });
      }
      const query = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
      assert.deepEqual({ ...parseQueryString(query) }, { ...expected });
    }),
  );
});

test('any query parses to strings and arrays of strings, without an error', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (query) => {
      for (const value of Object.values(parseQueryString(query))) {
        assert.ok(typeof value === 'string' || (Array.isArray(value) && value.length > 1 && value.every((item) => typeof item === 'string')));
      }
    }),
  );
});

/** What Node's URLSearchParams parses `query` to, a repeated name's values in an array, in order: the parsing keyfleet promises. */
function asUrlSearchParamsParses(query: string): Record<string, string | string[]> {
  const expected: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    const earlier = Object.hasOwn(expected, name) ? expected[name] : undefined;
    Object.defineProperty(expected, name, { value: earlier === undefined ? value : [earlier, value].flat(), enumerable: true, writable: true, configurable: true });
  }
  return expected;
}

/** Queries made of the characters a parser has to get right: separators, escapes valid or not, bytes of UTF-8 or not, '+', a leading '?', letters beyond ASCII and lone surrogates. */
const trickyQuery = fc
  .array(
    fc.oneof(
      fc.constantFrom('&', '=', '+', '%', '?', '%2', '%41', '%2B', '%26', '%3D', '%25', '%zz', '%ff', '%C3%A9', '%E2%82%AC', '%F0%9F%98%80', '%ED%A0%80', '%C0%80', '%e2%82'),
      fc.constantFrom('a', 'b', 'kasFirmware', '__proto__', '0', 'é', '€', '\uD800', '\uDC00', '😀', ' '),
      fc.string({ unit: 'binary', maxLength: 4 }),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(''));

test('any query parses as URLSearchParams parses it: names, values, repeats and escapes alike', () => {
  fc.assert(
    fc.property(fc.oneof(trickyQuery, fc.string({ unit: 'binary', maxLength: 60 })), (query) => {
      assert.deepEqual({ ...parseQueryString(query) }, asUrlSearchParamsParses(query));
    }),
    { numRuns: 5000 },
  );
});

test("a device's poll query, its URLs escaped, parses as URLSearchParams parses it", () => {
  const query = new URLSearchParams({ kasFirmware: '3.0.0', kasDateTime: '1764561600000', configUrl: '/api/v1/config', auditUrl: 'https://keys.example/api/v1/audit?x=1&y=2', assetList: 'a'.repeat(64), installCode: '12345678', note: 'a b+c' }).toString();
  assert.match(query, /%2F/);
  assert.deepEqual({ ...parseQueryString(query) }, asUrlSearchParamsParses(query));
  assert.deepEqual({ ...parseQueryString(`?${query}`) }, asUrlSearchParamsParses(`?${query}`));
});

test("'+' is a space, an escape that is not valid stays as sent, and bytes that are not UTF-8 become U+FFFD", () => {
  assert.deepEqual({ ...parseQueryString('a+b=c+d&x=%zz&y=a%41%zz&z=%ff&euro=%E2%82%AC&half=%4&flag&=empty-name&w=1=2') }, {
    'a b': 'c d',
    x: '%zz',
    y: 'aA%zz',
    z: '\uFFFD',
    euro: '€',
    half: '%4',
    flag: '',
    '': 'empty-name',
    w: '1=2',
  });
});

test('an empty query has no parameters, and a parameter named __proto__ is a parameter, not a prototype', () => {
  assert.deepEqual(Object.keys(parseQueryString('')), []);
  const parsed = parseQueryString('__proto__=1&constructor=2');
  const prototype: object = Object.getPrototypeOf(parsed);
  assert.deepEqual([Reflect.ownKeys(prototype), Object.getPrototypeOf(prototype)], [[], null]);
  assert.deepEqual({ ...parsed }, { ['__proto__']: '1', constructor: '2' });
});

test('a parsed query inherits no members: a name not sent reads as undefined, whatever the name', () => {
  const parsed = parseQueryString('a=1');
  for (const name of ['toString', 'constructor', 'hasOwnProperty', 'valueOf', '__proto__', '__defineGetter__']) {
    assert.equal(parsed[name], undefined, name);
    assert.equal(name in parsed, false, name);
  }
  assert.deepEqual(parseQueryString('toString=x&toString=y').toString, ['x', 'y']);
});

test('queries parsed one after another, sharing names, each parse as URLSearchParams parses it', () => {
  // Names that are prefixes of one another, escaped and not, repeated, integer-like, empty: the names and escaped values of one query are looked for in the next.
  const name = fc.constantFrom('kasFirmware', 'kasFirmwar', 'kasFirmwareX', 'kas%46irmware', 'kas+Firmware', 'kas%2BFirmware', 'a', 'b', '0', '1', '', '__proto__', 'é', '%C3%A9');
  const value = fc.constantFrom('', '1', '3.0.0', 'a+b', '%2F', '%zz', '=');
  const query = fc.array(fc.tuple(name, value), { maxLength: 8 }).map((pairs) => pairs.map(([n, v]) => `${n}=${v}`).join('&'));
  fc.assert(
    fc.property(fc.array(fc.oneof(query, trickyQuery), { minLength: 2, maxLength: 6 }), (queries) => {
      for (const sent of queries) assert.deepEqual({ ...parseQueryString(sent) }, asUrlSearchParamsParses(sent), sent);
    }),
    { numRuns: 3000 },
  );
});

test("a device's polls parse the same whether or not the query before had the same names", () => {
  const poll = (kas: string) => `kasFirmware=${kas}&kasDateTime=1764561600000&configUrl=%2Fapi%2Fv1%2Fconfig&installCode=12345678`;
  for (const sent of [poll('3.0.0'), poll('3.0.1'), 'kasFirmwareX=1&kasDateTim=2', poll('3.0.2'), poll('3.0.2').replace('kasFirmware', 'kasFirmwarf')]) {
    assert.deepEqual({ ...parseQueryString(sent) }, asUrlSearchParamsParses(sent), sent);
  }
});

test('an escaped value parses the same whether the query before had it at its place, another value there, or another name', () => {
  const queries = [
    'configUrl=%2Fapi%2Fv1%2Fconfig&auditUrl=%2Fapi%2Fv1%2Faudit',
    'configUrl=%2Fapi%2Fv1%2Fconfig&auditUrl=%2Fapi%2Fv2%2Faudit',
    'other=%2Fapi%2Fv1%2Fconfig&auditUrl=%2Fapi%2Fv1%2Faudit',
    'configUrl=%2Fapi%2Fv1%2Fconfig&auditUrl=a+b',
    'auditUrl=%2Fapi%2Fv1%2Fconfig&configUrl=%2Fapi%2Fv1%2Faudit',
    'configUrl=%zz&auditUrl=%2Fapi%2Fv1%2Faudit',
    'configUrl=%2Fapi%2Fv1%2Fconfig&auditUrl=%ff',
    'configUrl=%2Fapi%2Fv1%2Fconfig&auditUrl=%2Fapi%2Fv1%2Faudit',
  ];
  for (const sent of [...queries, ...[...queries].reverse()]) assert.deepEqual({ ...parseQueryString(sent) }, asUrlSearchParamsParses(sent), sent);
});
