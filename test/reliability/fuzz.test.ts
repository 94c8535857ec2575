import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { renderFieldPath } from '../../src/http/validation.ts';
import { MAX_JSON_DEPTH } from '../../src/http/json-bodies.ts';
import { isPublic, jwtScopesOf, operationName, operationsOf, pathParameters, queryParameters, usesApiKey, type JsonSchema, type Operation } from './openapi-operations.ts';
import { buildTenantWorld, identifiersOf, sampleBody, type TenantWorld } from './tenants.ts';

/** Fixed, so that a failure replays exactly: `seed` and `path` of fast-check's report. */
const SEED = 20_261_122;
const RANDOM_CASES_PER_OPERATION = 10;

/** Path segments and query values as raw URL text (already percent-encoded where they need it). */
const NASTY_URL_TEXT = [
  '%00', 'a%00b', '%01%02%1B%1F%7F', '%0D%0AX-Injected:%201', '%E2%80%AE', '%F0%9F%98%80', '%C0%AF', '%ED%A0%80', '%FF%FE',
  '%', '%ZZ', '%2F', '..%2F..%2Fetc', '%20', 'x'.repeat(10_000), '-1', '1e309', 'NaN', 'true', '[]',
];
/** Values that break a field's type, whatever it is (as a whole body, and in each field). */
const WRONG_TYPED = [null, -1, 1.5, 1e308, '', true, [], {}];
/** String values with what a database or a log may choke on. */
const NASTY_STRINGS = ['\u0000', 'a\u0000b', '\u0001\u001b\u007f', '\r\nX-Injected: 1', '\u202e', '\ud800', '\uffff', '😀'.repeat(1000), 'x'.repeat(100_000), "'; DROP TABLE okms; --"];
const BAD_JSON = ['{', '{"a":', '[1,]', 'nul', '\u0000', '"\\ud800"', '{"a":1}{"b":2}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', '\uFEFF{}'];
const CONTENT_TYPES = [
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16',
  'application/json; charset=latin1', 'application/xml', 'application/merge-patch+json', 'application/octet-stream', 'application/json, text/plain', ';;;', '',
];
const ODD_METHODS = ['OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'SEARCH', 'PURGE', 'LOCK', 'MKCOL', 'COPY'] as const;
/** Header values (each a legal header: no CR, LF or NUL) that a route, its auth or the firmware download has to parse. */
const ODD_HEADERS: [string, string][] = [
  ...['Bearer', 'Bearer ', `Bearer ${'x'.repeat(8000)}`, 'Bearer a.b.c', 'Bearer ..', 'Basic Zm9vOmJhcg==', 'bearer\ttoken', `Bearer eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLy4uL2V0Yy9wYXNzd2QifQ.${'e30'}.AAAA`, `Bearer kf_live_${'f'.repeat(16)}${'x'.repeat(40)}`, 'Bearer kf_live_', 'Bearer \u00ff\u00fe'].map(
    (value): [string, string] => ['authorization', value],
  ),
  ...['bytes=0-', 'bytes=-1', 'bytes=-0', 'bytes=5-1', 'bytes=0-1,2-3', 'bytes=a-b', 'items=0-1', 'bytes=999999999999999999999999-', `bytes=${'0-1,'.repeat(1000)}0-1`, 'bytes=4095-4096'].map(
    (value): [string, string] => ['range', value],
  ),
  ['if-range', 'W/"x"'], ['if-range', 'Mon, 99 Foo 2026'], ['if-none-match', '*'], ['if-none-match', '"'.repeat(1000)],
  ['x-forwarded-for', '999.1.1.1, ::ffff:1.2.3.4, unknown'], ['accept', 'application/xml'], ['accept', '*/*;q=abc'], ['accept-encoding', 'gzip;q=2, br;q=-1'],
  ['content-length', '1'], ['transfer-encoding', 'chunked, gzip'], ['expect', '100-continue'], ['x-request-id', 'x'.repeat(5000)],
];
/**
 * Numbers as JSON text (JSON.stringify cannot write most of them): beyond a double, negative
 * zero, integers beyond 2^53 and 2^63, and forms a double keeps but not as written.
 */
const NON_FINITE_NUMBERS = ['1e400', '-1e400', '1E+999', `1${'0'.repeat(400)}`];
const ODD_NUMBERS = ['-0', '-0.0', '123456789012345678901234567890', '9007199254740993', '-9223372036854775809', '18446744073709551616', '1.0', '1e308', '5e-324', '-1.7976931348623157e308'];
const HUGE_BYTES = 2 * 1024 * 1024 + 1;
const DEEP_LEVELS = 100_000;

type Path = (string | number)[];

/** Every place of a JSON schema a value can be put (objects' properties, arrays' first item), with the schema there. */
function leavesOf(schema: JsonSchema, path: Path = []): { path: Path; schema: JsonSchema }[] {
  const here = path.length > 0 ? [{ path, schema }] : [];
  const alternatives = schema.anyOf ?? [];
  const nested = [
    ...Object.entries(schema.properties ?? {}).flatMap(([name, property]) => leavesOf(property, [...path, name])),
    ...(schema.items ? leavesOf(schema.items, [...path, 0]) : []),
    ...alternatives.flatMap((alternative) => leavesOf(alternative, path).filter((leaf) => leaf.path.length > path.length)),
  ];
  return [...here, ...nested];
}

const isStringSchema = (schema: JsonSchema) =>
  schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string')) || (schema.anyOf ?? []).some(isStringSchema);

const isObjectSchema = (schema: JsonSchema): boolean =>
  schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object')) || schema.type === undefined || (schema.anyOf ?? []).some(isObjectSchema);

/** A copy of `base` with `value` at `path`, creating the objects and arrays on the way. */
function withValueAt(base: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...Path];
  if (Array.isArray(base) || (typeof head === 'number' && (typeof base !== 'object' || base === null))) {
    const copy: unknown[] = Array.isArray(base) ? [...(base as unknown[])] : [];
    copy[Number(head)] = withValueAt(copy[Number(head)], rest, value);
    return copy;
  }
  const copy: Record<string, unknown> = typeof base === 'object' && base !== null ? { ...(base as Record<string, unknown>) } : {};
  copy[head] = withValueAt(copy[head], rest, value);
  return copy;
}

/** An error answer as contract §9 wants it: JSON, with a message (`msg` for DLock, `error_msg` elsewhere). */
const isJsonMessage = (response: LightMyRequestResponse) =>
  response.headers['content-type'] === 'application/json; charset=utf-8' && /"(msg|error_msg)":"[^"]+"/.test(response.body);

const percentEncoded = (text: string) => [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

forEachDatabase('fuzz of every route generated from the OpenAPI document', (kind) => {
  let t: TestApp;
  let world: TenantWorld;
  let operations: Operation[];
  let requestsTried = 0;
  const serverErrors: string[] = [];
  /** 4xx answers that are not JSON with a message saying what is wrong (contract §9). */
  const unexplained: string[] = [];

  /** The operation's valid credential: A's API key, or an operator token (or A's customer token) with every scope. */
  const credentialOf = (operation: Operation, as: 'operator' | 'customer') =>
    usesApiKey(operation) ? world.a.apiKey : jwtScopesOf(operation) ? (as === 'operator' ? world.adminToken : world.a.token) : undefined;

  /** Sends one request with the operation's valid credential; records any 5xx. */
  async function send(
    operation: Operation,
    what: string,
    options: { path?: string; query?: string; method?: string; payload?: string | Buffer; contentType?: string; as?: 'operator' | 'customer'; header?: [string, string] },
  ) {
    const credential = credentialOf(operation, options.as ?? 'operator');
    const headers: Record<string, string> = credential ? { authorization: `Bearer ${credential}` } : {};
    if (options.contentType !== undefined) headers['content-type'] = options.contentType;
    if (options.header) headers[options.header[0]] = options.header[1];
    const request: InjectOptions = {
      method: (options.method ?? operation.method) as InjectOptions['method'],
      url: `${options.path ?? validPath(operation)}${options.query ?? defaultQuery(operation)}`,
      headers,
      ...(options.payload === undefined ? {} : { payload: options.payload }),
    };
    requestsTried++;
    const response = await t.app.inject(request);
    if (response.statusCode >= 500) serverErrors.push(`${operationName(operation)} ${what}: ${response.statusCode} ${response.body.slice(0, 200)}`);
    if (response.statusCode >= 400 && request.method !== 'HEAD' && !isJsonMessage(response)) {
      unexplained.push(`${operationName(operation)} ${what}: ${response.statusCode} ${String(response.headers['content-type'])} ${response.body.slice(0, 120)}`);
    }
    return response;
  }

  function validPath(operation: Operation, override: Record<string, string> = {}): string {
    const values = identifiersOf(operation, world.a, world);
    return operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => override[name] ?? encodeURIComponent(values[name]!));
  }
  const defaultQuery = (operation: Operation) => (queryParameters(operation).some((parameter) => parameter.name === 'customer') ? `?customer=${world.a.name}` : '');
  const jsonSchemaOf = (operation: Operation) => Object.entries(operation.requestBody).find(([type]) => type.includes('json'))?.[1];
  const baseBody = (operation: Operation): unknown => {
    const sample = sampleBody(operation, world.a);
    return sample && sample.contentType.includes('json') ? JSON.parse(sample.payload.toString()) : {};
  };
  const sendJson = (operation: Operation, what: string, value: unknown) => send(operation, what, { payload: JSON.stringify(value), contentType: 'application/json' });

  // Deletions last, so that the other operations meet A's resources still there.
  const inFuzzOrder = () => [...operations].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));

  before(async () => {
    t = await buildTestApp(kind);
    world = await buildTenantWorld(t);
    operations = await operationsOf(t.app);
  });
  beforeEach(() => {
    serverErrors.length = 0;
    unexplained.length = 0;
  });
  after(async () => {
    console.log(`fuzz [${kind}]: ${requestsTried} requests tried over ${operations.length} operations`);
    await t.close();
  });

  test('NUL, control characters, bad encodings and very long values in every path and query parameter: no 5xx, every 4xx a JSON message', async () => {
    for (const operation of inFuzzOrder()) {
      for (const parameter of pathParameters(operation)) {
        for (const text of NASTY_URL_TEXT) await send(operation, `path ${parameter.name}=${text.slice(0, 20)}`, { path: validPath(operation, { [parameter.name]: text }) });
      }
      for (const parameter of queryParameters(operation)) {
        for (const text of NASTY_URL_TEXT) await send(operation, `query ${parameter.name}=${text.slice(0, 20)}`, { query: `?${parameter.name}=${text}` });
        await send(operation, `query ${parameter.name} twice`, { query: `?${parameter.name}=1&${parameter.name}=2` });
      }
      await send(operation, 'unknown query parameter', { query: '?nope=1' });
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });

  test('bad JSON, a byte-order mark, a wrong type or a nasty string in every field of every body: no 5xx, every 4xx a JSON message', async () => {
    for (const operation of inFuzzOrder()) {
      for (const text of BAD_JSON) await send(operation, `bad JSON ${JSON.stringify(text)}`, { payload: text, contentType: 'application/json' });
      const schema = jsonSchemaOf(operation);
      if (!schema) continue;
      const base = baseBody(operation);
      await sendJson(operation, 'the sample body', base);
      await send(operation, 'the sample body after a byte-order mark', { payload: `\uFEFF${JSON.stringify(base)}`, contentType: 'application/json' });
      for (const value of WRONG_TYPED) await sendJson(operation, `body ${JSON.stringify(value)}`, value);
      for (const leaf of leavesOf(schema)) {
        const at = leaf.path.join('.');
        for (const value of WRONG_TYPED) await sendJson(operation, `${at}=${JSON.stringify(value)}`, withValueAt(base, leaf.path, value));
        if (isStringSchema(leaf.schema)) {
          for (const value of NASTY_STRINGS) await sendJson(operation, `${at}=${JSON.stringify(value.slice(0, 20))}`, withValueAt(base, leaf.path, value));
        }
      }
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });

  test('non-finite, huge and negative-zero numbers and duplicate names in every field of every body: no 5xx, every 4xx a JSON message, a non-finite number a 400 naming its field', async () => {
    const misnamed: string[] = [];
    /** The body with `numberText` written as is at `path` (or as the whole body). */
    const withNumberAt = (base: unknown, path: Path, numberText: string) =>
      path.length === 0 ? numberText : JSON.stringify(withValueAt(base, path, '\u0000number')).replace('"\\u0000number"', numberText);
    for (const operation of inFuzzOrder()) {
      const schema = jsonSchemaOf(operation);
      if (!schema) continue;
      const base = baseBody(operation);
      // Beside every field, a member of its own inside each object field: free-form JSON (users_assets, payloads, user_data) has no leaves of its own.
      const places: Path[] = [[], ...leavesOf(schema).flatMap((leaf) => (isObjectSchema(leaf.schema) ? [leaf.path, [...leaf.path, 'fuzz']] : [leaf.path]))];
      for (const path of places) {
        const leaf = { path };
        const at = leaf.path.join('.') || 'body';
        for (const text of [...NON_FINITE_NUMBERS, ...ODD_NUMBERS]) {
          const response = await send(operation, `${at}=${text.slice(0, 30)}`, { payload: withNumberAt(base, leaf.path, text), contentType: 'application/json' });
          const expected = `${renderFieldPath('body', leaf.path)}: a number that cannot be kept exactly (non-finite)`;
          if (NON_FINITE_NUMBERS.includes(text) && (response.statusCode !== 400 || !response.body.includes(JSON.stringify(expected)))) {
            misnamed.push(`${operationName(operation)} ${at}=${text.slice(0, 30)}: ${response.statusCode} ${response.body.slice(0, 160)}`);
          }
        }
      }
      // Duplicate names: the second of each top-level field with a wrong-typed value, then the other way round.
      if (base !== null && typeof base === 'object' && !Array.isArray(base)) {
        const text = JSON.stringify(base).slice(1, -1);
        for (const name of Object.keys(base)) {
          await send(operation, `${name} twice, the last odd`, { payload: `{${text},${JSON.stringify(name)}:1e308}`, contentType: 'application/json' });
          await send(operation, `${name} twice, the first odd`, { payload: `{${JSON.stringify(name)}:-0,${text}}`, contentType: 'application/json' });
        }
      }
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
    assert.deepEqual(misnamed, []);
  });

  test('a repeated name inside every object field, and values nested as deep as a body may be in every field: no 5xx, every 4xx a JSON message, a refused repeated name a 400 naming it', async () => {
    const misnamed: string[] = [];
    /** The body with `text` written as is at `path`. */
    const withTextAt = (base: unknown, path: Path, text: string) => JSON.stringify(withValueAt(base, path, '\u0000text')).replace('"\\u0000text"', text);
    /** A value `levels` deep, objects and arrays in turn, with odd numbers at the bottom. */
    const nested = (levels: number) => {
      const openers = Array.from({ length: levels }, (_, level) => (level % 2 === 0 ? '{"n":' : '['));
      const closers = openers.map((opener) => (opener === '[' ? ']' : '}')).reverse();
      return `${openers.join('')}${levels % 2 === 0 ? '123456789012345678901234567890,-0,1.0' : '-0.0'}${closers.join('')}`;
    };
    for (const operation of inFuzzOrder()) {
      const schema = jsonSchemaOf(operation);
      if (!schema) continue;
      const base = baseBody(operation);
      for (const leaf of leavesOf(schema)) {
        const at = leaf.path.join('.');
        if (isObjectSchema(leaf.schema)) {
          // Free-form objects (users_assets items, payloads, user_data, audit records) take any name; JSON.parse keeps the last of two.
          const response = await send(operation, `${at} with a name twice`, { payload: withTextAt(base, leaf.path, '{"fuzz":1.0,"fuzz":-0}'), contentType: 'application/json' });
          const field = renderFieldPath('body', [...leaf.path, 'fuzz']);
          if (response.statusCode === 400 && response.body.includes('repeat a name') && !response.body.includes(`"error_msg":"${field}: `)) {
            misnamed.push(`${operationName(operation)} ${at}: ${response.body.slice(0, 160)}`);
          }
        }
        // A value at this place sits inside path.length containers: this one fills the body to exactly MAX_JSON_DEPTH.
        const levels = MAX_JSON_DEPTH - leaf.path.length;
        if (levels > 0) await send(operation, `${at} nested ${levels} deep`, { payload: withTextAt(base, leaf.path, nested(levels)), contentType: 'application/json' });
      }
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
    assert.deepEqual(misnamed, []);
  });

  test('huge and deeply nested bodies, odd content types and odd methods on every route: no 5xx, every 4xx a JSON message', async () => {
    const huge = JSON.stringify({ padding: 'x'.repeat(HUGE_BYTES) });
    const deepArray = `${'['.repeat(DEEP_LEVELS)}${']'.repeat(DEEP_LEVELS)}`;
    const deepObject = `${'{"a":'.repeat(DEEP_LEVELS)}1${'}'.repeat(DEEP_LEVELS)}`;
    for (const operation of inFuzzOrder()) {
      await send(operation, 'huge body', { payload: huge, contentType: 'application/json' });
      await send(operation, 'deep array', { payload: deepArray, contentType: 'application/json' });
      await send(operation, 'deep object', { payload: deepObject, contentType: 'application/json' });
      const schema = jsonSchemaOf(operation);
      for (const leaf of schema ? leavesOf(schema) : []) {
        await sendJson(operation, `${leaf.path.join('.')} nested 2 000 deep`, withValueAt(baseBody(operation), leaf.path, JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`)));
      }
      for (const contentType of CONTENT_TYPES) await send(operation, `content type ${contentType}`, { payload: JSON.stringify(baseBody(operation)), contentType });
      await send(operation, 'a JSON body without a content type', { payload: '{}', contentType: '' });
      for (const method of ODD_METHODS) await send(operation, `method ${method}`, { method });
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });

  test('odd Authorization, Range, conditional, forwarding and framing headers on every route: no 5xx, every 4xx a JSON message', async () => {
    for (const operation of inFuzzOrder()) {
      const sample = sampleBody(operation, world.a);
      // Authorization on every operation; the headers of downloads and caches on reads only.
      for (const header of ODD_HEADERS.filter(([name]) => name === 'authorization' || operation.method === 'GET')) {
        await send(operation, `header ${header[0]}: ${header[1].slice(0, 30)}`, { header, ...(sample ? { payload: sample.payload, contentType: sample.contentType } : {}) });
      }
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });

  test(`${RANDOM_CASES_PER_OPERATION} random requests per operation and credential (seed ${SEED}): random parameters, fields and values, no 5xx, every 4xx a JSON message`, async () => {
    for (const [index, [operation, as]] of inFuzzOrder().flatMap((operation) => (['customer', 'operator'] as const).map((as) => [operation, as] as const)).entries()) {
      const schema = jsonSchemaOf(operation);
      const leaves = schema ? leavesOf(schema) : [];
      const urlText = fc.string({ unit: 'binary', maxLength: 80 }).map(percentEncoded);
      const request = fc.record({
        path: fc.record(Object.fromEntries(pathParameters(operation).map((parameter) => [parameter.name, fc.option(urlText, { nil: undefined })]))),
        query: fc.array(fc.tuple(fc.constantFrom(...queryParameters(operation).map((parameter) => parameter.name), 'customer', 'x'), urlText), { maxLength: 3 }),
        edits: fc.array(fc.tuple(leaves.length > 0 ? fc.constantFrom(...leaves.map((leaf) => leaf.path)) : fc.constant([] as Path), fc.jsonValue({ maxDepth: 3 })), { maxLength: 3 }),
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ path, query, edits }) => {
          const override = Object.fromEntries(Object.entries(path).filter((entry): entry is [string, string] => entry[1] !== undefined));
          const body = edits.reduce<unknown>((current, [at, value]) => withValueAt(current, at, value), baseBody(operation));
          const search = query.length > 0 ? `?${query.map(([name, value]) => `${name}=${value}`).join('&')}` : defaultQuery(operation);
          await send(operation, `random ${JSON.stringify({ path, query, edits }).slice(0, 300)}`, { path: validPath(operation, override), query: search, payload: JSON.stringify(body), contentType: 'application/json', as });
        }),
        { seed: SEED + index, numRuns: RANDOM_CASES_PER_OPERATION },
      );
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });

  test('after the fuzz, the service is alive and ready', async () => {
    const [health, ready] = await Promise.all([t.app.inject({ method: 'GET', url: '/healthz' }), t.app.inject({ method: 'GET', url: '/readyz' })]);

    assert.deepEqual([health.statusCode, ready.statusCode], [200, 200]);
  });
});

const FORWARDED_FOR = ['999.1.1.1', '::ffff:1.2.3.4', 'unknown', '1.2.3.4, , ,', 'fe80::1%eth0', `${'1.1.1.1, '.repeat(500)}1.1.1.1`, '[::1]:80', '_'];

forEachDatabase('fuzz of the public routes with the hardening settings on (no auto-enrol, device tokens, TRUST_PROXY, rate limits)', (kind) => {
  let t: TestApp;
  let publicOperations: Operation[];
  let requestsTried = 0;
  before(async () => {
    t = await buildTestApp(kind, {
      OKM_AUTO_ENROL: 'false',
      OKM_DEVICE_TOKENS: 'required',
      TRUST_PROXY: 'true',
      // On, so that every request is counted (keyed by odd addresses and credentials), but high enough to reach the routes.
      RATE_LIMIT_DEVICE_PER_MINUTE: '1000000',
      RATE_LIMIT_API_PER_MINUTE: '1000000',
    });
    // With device tokens required, the device routes declare the deviceToken scheme.
    publicOperations = (await operationsOf(t.app)).filter(isPublic);
  });
  after(async () => {
    console.log(`fuzz, hardened [${kind}]: ${requestsTried} requests tried over ${publicOperations.length} public and device operations`);
    await t.close();
  });

  test('NUL and odd path values, odd credentials and forwarded addresses on the device routes, counted by the rate limiter: no 5xx, every 4xx a JSON message', async () => {
    const serverErrors: string[] = [];
    const unexplained: string[] = [];
    const send = async (operation: Operation, what: string, path: string, headers: Record<string, string>) => {
      requestsTried++;
      const response = await t.app.inject({ method: operation.method as 'GET', url: path, headers, ...(operation.method === 'POST' ? { payload: '{"event":"open"}' } : {}) });
      if (response.statusCode >= 500) serverErrors.push(`${operationName(operation)} ${what}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      if (response.statusCode >= 400 && !isJsonMessage(response)) unexplained.push(`${operationName(operation)} ${what}: ${response.statusCode} ${response.body.slice(0, 120)}`);
    };
    for (const operation of publicOperations) {
      const values: Record<string, string> = { serialNumber: 'HARD-1', kind: 'kas', version: '1.0.0' };
      const pathWith = (override: Record<string, string>) =>
        operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => override[name] ?? encodeURIComponent(values[name] ?? 'x'));
      const json: Record<string, string> = operation.method === 'POST' ? { 'content-type': 'application/json' } : {};
      for (const parameter of pathParameters(operation)) {
        for (const text of NASTY_URL_TEXT) await send(operation, `path ${parameter.name}=${text.slice(0, 20)}`, pathWith({ [parameter.name]: text }), json);
      }
      for (const header of ODD_HEADERS) await send(operation, `header ${header[0]}: ${header[1].slice(0, 30)}`, pathWith({}), { ...json, [header[0]]: header[1] });
      for (const address of FORWARDED_FOR) await send(operation, `x-forwarded-for ${address.slice(0, 30)}`, pathWith({}), { ...json, 'x-forwarded-for': address });
    }

    assert.deepEqual(serverErrors, []);
    assert.deepEqual(unexplained, []);
  });
});
