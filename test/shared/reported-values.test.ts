import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import Fastify from 'fastify';
import { parseQueryString } from '../../src/shared/query-string.ts';
import {
  REPORTED_PARAMETERS,
  REPORTED_VALUE_MAX_LENGTH,
  STORED_QUERY_MAX_LENGTH,
  reportedQueryOf,
  reportedValuesJson,
  storedReport,
  storedReportValues,
} from '../../src/shared/reported-values.ts';

/** Names a JSON report is built from: reported ones and any other. */
const parameterName = fc.oneof(fc.constantFrom(...REPORTED_PARAMETERS), fc.string({ maxLength: 12 }));
const parameterValue = fc.oneof(fc.string({ maxLength: 300 }), fc.array(fc.string({ maxLength: 20 }), { minLength: 2, maxLength: 3 }));

test('the stored reported values are the known parameters sent once, in the parameters order, each cut to the bounded length', () => {
  fc.assert(
    fc.property(fc.dictionary(parameterName, parameterValue, { maxKeys: 20 }), (query) => {
      const expected = REPORTED_PARAMETERS.flatMap((name) => {
        const value = Object.hasOwn(query, name) ? query[name] : undefined;
        return typeof value === 'string' ? [[name, value.slice(0, REPORTED_VALUE_MAX_LENGTH)] as const] : [];
      });
      assert.deepEqual(Object.entries(JSON.parse(reportedValuesJson(query))), expected);
    }),
  );
});

test('every known parameter sent is stored, in the order the parameters are listed', () => {
  const query = Object.fromEntries([...REPORTED_PARAMETERS].reverse().map((name) => [name, `${name} value`]));
  assert.deepEqual(Object.keys(JSON.parse(reportedValuesJson(query))), REPORTED_PARAMETERS);
});

test('an unknown parameter, even one named like an object property, is not stored', () => {
  const query = Object.assign(Object.create(null), { toString: 'x', constructor: 'y', retailCfg: '2' });
  assert.equal(reportedValuesJson(query), '{"retailCfg":"2"}');
  assert.equal(reportedValuesJson({}), '{}');
});

/** The values a report shows: the known parameters sent once, cut to the bounded length, in order (their JSON read back). */
const shownValues = (query: Record<string, unknown>) => JSON.parse(reportedValuesJson(query)) as Record<string, string>;

/** Queries of the names given: repeats, values past the bound, escapes valid or not, '+', separators, sent escaped or raw. */
const queryOf = (name: fc.Arbitrary<string>) =>
  fc
    .array(
      fc.tuple(name, fc.oneof(fc.string({ maxLength: 300 }), fc.constantFrom('a+b', '%2F', '%zz', '%ff', '%E2%82%AC', '=', '?', '#')), fc.boolean()),
      { maxLength: 18 },
    )
    .map((pairs) => pairs.map(([name, value, escaped]) => (escaped ? `${encodeURIComponent(name)}=${encodeURIComponent(value)}` : `${name}=${value}`)).join('&'));

/** Queries as devices send them (reported names only), and as others may (any names). */
const sentQuery = fc.oneof(
  queryOf(fc.constantFrom(...REPORTED_PARAMETERS)),
  queryOf(fc.oneof(fc.constantFrom(...REPORTED_PARAMETERS), fc.constantFrom('note', 'token', '__proto__', 'toString', ''), fc.string({ maxLength: 6 }))),
);

test('a stored report reads back as the values of the query the poll was given: stored as sent, or as JSON when long or holding a parameter no OKM reports', () => {
  fc.assert(
    fc.property(sentQuery, fc.constantFrom('?', '??'), (query, delimiter) => {
      const url = `/api/v1/okm/config/OKM-1${delimiter}${query}`;
      // What the router hands the parser for that URL (find-my-way: after the first '?').
      const parsed = parseQueryString(url.slice(url.indexOf('?') + 1));
      const stored = storedReport(reportedQueryOf(url), parsed);
      assert.deepEqual(storedReportValues(stored), shownValues(parsed));
      const onlyReported = Object.keys(parsed).every((name) => (REPORTED_PARAMETERS as readonly string[]).includes(name));
      assert.equal(stored.startsWith('{'), reportedQueryOf(url).length > STORED_QUERY_MAX_LENGTH || !onlyReported);
    }),
    { numRuns: 3000 },
  );
});

test('a parameter no OKM reports, such as a token put in the URL, is not stored', () => {
  const query = 'kasFirmware=2.10.0&token=kf_okm_secret&retailCfg=2';
  const stored = storedReport(reportedQueryOf(`/c/OKM-1?${query}`), parseQueryString(query));
  assert.equal(stored, '{"kasFirmware":"2.10.0","retailCfg":"2"}');
  assert.doesNotMatch(stored, /kf_okm_secret/);
});

test('a report stored as JSON, as polls stored every report before, reads back unchanged', () => {
  assert.deepEqual(storedReportValues('{"kasFirmware":"2.10.0","retailCfg":"2"}'), { kasFirmware: '2.10.0', retailCfg: '2' });
  assert.deepEqual(storedReportValues('{}'), {});
});

test('a report longer than the bound is stored as its bounded values, and a URL without a query stores an empty one', () => {
  const long = `kasFirmware=${'9'.repeat(STORED_QUERY_MAX_LENGTH)}&retailCfg=2`;
  const stored = storedReport(reportedQueryOf(`/c/OKM-1?${long}`), parseQueryString(long));
  assert.equal(stored, JSON.stringify({ kasFirmware: '9'.repeat(REPORTED_VALUE_MAX_LENGTH), retailCfg: '2' }));
  assert.equal(reportedQueryOf('/c/OKM-1'), '?');
  assert.deepEqual(storedReportValues(storedReport(reportedQueryOf('/c/OKM-1'), {})), {});
});

test("the query stored is the one the router parsed, whatever the URL's delimiters", async () => {
  const app = Fastify({ routerOptions: { querystringParser: parseQueryString } });
  app.get('/c/:serialNumber', async (request) => ({
    given: shownValues(request.query as Record<string, unknown>),
    stored: storedReportValues(storedReport(reportedQueryOf(request.url), request.query as Record<string, unknown>)),
  }));
  try {
    for (const url of ['/c/OKM-1?retailCfg=2&cacheMode=1', '/c/OKM-1??retailCfg=2', '/c/OKM-1#cacheMode=1?retailCfg=2', '/c/OKM-1?retailCfg=2#cacheMode=1', '/c/OKM-1', '/c/OKM-1?']) {
      const { given, stored } = (await app.inject({ method: 'GET', url })).json<{ given: object; stored: object }>();
      assert.deepEqual(stored, given, url);
    }
  } finally {
    await app.close();
  }
});
