import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestApiKey, issueTestToken } from '../helpers/tokens.ts';

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema?: Record<string, unknown>;
}

interface Operation {
  parameters?: Parameter[];
  security?: Record<string, string[]>[];
}

interface Route {
  method: string;
  path: string;
  operation: Operation;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every operation of the app's OpenAPI document (generated from the registered routes and their schemas). */
function routesOf(app: TestApp['app']): Route[] {
  const document = (app as unknown as { swagger(): { paths: Record<string, Record<string, Operation>> } }).swagger();
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    METHODS.filter((method) => operations[method]).map((method) => ({ method: method.toUpperCase(), path, operation: operations[method]! })),
  );
}

/** Every registered route path with a parameter, from the router itself (":name" and "*"), as OpenAPI writes it. */
function parameterisedRouterPaths(app: TestApp['app']): string[] {
  const prefixes: string[] = [];
  const paths: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    prefixes.length = depth;
    const path = (depth === 0 ? '' : prefixes[depth - 1]!) + match[2]!;
    prefixes[depth] = path;
    if (/[:*]/.test(path)) paths.push(path.replace(/:(\w+)/g, '{$1}'));
  }
  return paths;
}

/** A valid value for each path parameter, so that only the one under test is wrong. */
const VALID: Record<string, string> = {
  serial: 'WALK-1',
  serialNumber: 'WALK-1',
  name: 'WALK-CA',
  id: '6f1c2b2e-7d41-4a55-9a0e-2f5b1c3d4e5f',
  kind: 'kas',
  version: '1.0.0',
};

const CONTROL_CHARACTERS = ['%00', '%01', '%1F', '%7F', '%C2%80'];

// An integer schema constrains too: no text, let alone a control character, passes it.
const isConstrained = (schema: Record<string, unknown> | undefined) =>
  schema !== undefined && (schema.type === 'integer' || ['pattern', 'enum', 'format', 'const', 'anyOf'].some((keyword) => keyword in schema));

forEachDatabase('every path and query parameter is validated by its route', (kind) => {
  let t: TestApp;
  let adminToken: string;
  let apiKey: string;
  before(async () => {
    t = await buildTestApp(kind);
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
    apiKey = await issueTestApiKey(t, 'walker');
  });
  after(() => t.close());

  const credentialsFor = (operation: Operation): Record<string, string> => {
    const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
    if (schemes.includes('dlockApiKey')) return { authorization: `Bearer ${apiKey}` };
    if (schemes.includes('jwt')) return { authorization: `Bearer ${adminToken}` };
    return {};
  };

  const send = (route: Route, path: string, query = '', headers: Record<string, string> = credentialsFor(route.operation)) =>
    t.app.inject({
      method: route.method,
      url: path + query,
      headers: { ...headers, ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { 'content-type': 'application/json' } : {}) },
      ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { payload: '{}' } : {}),
    });

  const withValues = (path: string, values: Record<string, string>) => path.replace(/\{(\w+)\}/g, (_whole, name: string) => values[name] ?? VALID[name]!);

  test('every parameterised route of the router is in the OpenAPI document (so the walk below covers it)', () => {
    const documented = new Set(routesOf(t.app).map((route) => route.path));
    // @fastify/swagger-ui's static files and the console's (test/console/plugin.test.ts): served
    // from a fixed directory, no database behind them.
    const undocumented = parameterisedRouterPaths(t.app).filter((path) => !documented.has(path) && !path.startsWith('/docs') && !path.startsWith('/console'));
    assert.deepEqual(undocumented, []);
  });

  test('every path parameter of every operation is declared with a constrained schema', () => {
    const missing: string[] = [];
    for (const route of routesOf(t.app)) {
      for (const name of route.path.match(/\{\w+\}/g) ?? []) {
        const declared = route.operation.parameters?.find((parameter) => parameter.in === 'path' && `{${parameter.name}}` === name);
        if (!isConstrained(declared?.schema)) missing.push(`${route.method} ${route.path} ${name}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('a control character in any path parameter is a 4xx with credentials, never a 5xx', async () => {
    const failures: string[] = [];
    let tried = 0;
    for (const route of routesOf(t.app)) {
      for (const name of (route.path.match(/\{(\w+)\}/g) ?? []).map((braced) => braced.slice(1, -1))) {
        for (const character of CONTROL_CHARACTERS) {
          const response = await send(route, withValues(route.path, { [name]: `a${character}b` }));
          tried++;
          if (response.statusCode < 400 || response.statusCode >= 500) failures.push(`${route.method} ${route.path} ${name}=a${character}b: ${response.statusCode} ${response.body}`);
          else if (route.path.startsWith('/v1/')) assert.deepEqual(Object.keys(response.json()).sort(), ['msg', 'status'], `${route.method} ${route.path}`);
        }
      }
    }
    assert.deepEqual(failures, []);
    assert.ok(tried > 50, `only ${tried} requests`);
  });

  test('a control character in any declared query parameter is never a 5xx', async () => {
    const failures: string[] = [];
    for (const route of routesOf(t.app)) {
      for (const parameter of (route.operation.parameters ?? []).filter((declared) => declared.in === 'query')) {
        for (const character of CONTROL_CHARACTERS) {
          const response = await send(route, withValues(route.path, {}), `?${parameter.name}=a${character}b`);
          if (response.statusCode >= 500) failures.push(`${route.method} ${route.path}?${parameter.name}: ${response.statusCode} ${response.body}`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  test('a control character in a device poll parameter is never a 5xx (the poll reads them leniently)', async () => {
    const failures: string[] = [];
    for (const name of ['installCode', 'kasFirmware', 'kasDateTime', 'configUrl', 'auditUrl', 'assetList', 'usersAssets', 'keyCheckoutWindowContact', 'cacheMode']) {
      for (const character of CONTROL_CHARACTERS) {
        const response = await t.app.inject({ method: 'GET', url: `/api/v1/config/WALK-POLL-1?${name}=a${character}b` });
        if (response.statusCode >= 500) failures.push(`${name}: ${response.statusCode} ${response.body}`);
      }
    }
    assert.deepEqual(failures, []);
  });

  test('without credentials, every authenticated route answers 401 before it looks at parameters or body', async () => {
    const failures: string[] = [];
    // A requirement without schemes (`{}`) makes the credential optional: the device routes with device tokens off.
    const needsCredentials = (operation: Operation) => (operation.security ?? []).length > 0 && (operation.security ?? []).every((requirement) => Object.keys(requirement).length > 0);
    for (const route of routesOf(t.app).filter((candidate) => needsCredentials(candidate.operation))) {
      const response = await send(route, withValues(route.path, Object.fromEntries(Object.keys(VALID).map((name) => [name, 'a%00b']))), '?customer=%00', {});
      if (response.statusCode !== 401) failures.push(`${route.method} ${route.path}: ${response.statusCode} ${response.body}`);
    }
    assert.deepEqual(failures, []);
  });
});
