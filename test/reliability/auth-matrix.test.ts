import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { SignJWT, base64url, generateKeyPair } from 'jose';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { aclUser } from '../acl/helpers.ts';
import { call } from '../okm/admin-helpers.ts';
import {
  isPublic,
  methodsNotAllowedOf,
  jwtScopesOf,
  operationName,
  operationsOf,
  pathParameters,
  queryParameters,
  urlOf,
  usesApiKey,
  type Operation,
} from './openapi-operations.ts';
import { CUSTOMER_SCOPES, ENROLMENT_CODE, buildTenantWorld, identifiersOf, sampleBody, snapshotOf, type Tenant, type TenantWorld } from './tenants.ts';

/**
 * Operations the document declares without security, and why each is public by design. The
 * list is checked against the document both ways: a route that loses its security
 * declaration, or a public route that gains one, fails the first test.
 */
const PUBLIC_OPERATIONS: Record<string, string> = {
  'GET /healthz': 'liveness probe of the load balancer and supervisor',
  'GET /readyz': 'readiness probe of the load balancer and supervisor',
  'GET /metrics': 'Prometheus scrape (contract §9); keep it on an internal network',
  'GET /.well-known/jwks.json': 'public keys that verify the deployment\'s tokens',
  'GET /embeddedv1/kas/config': 'device bootstrap: OKMs have no credential (contract §4)',
  'GET /embeddedv1/kas/config/{serialNumber}': 'device bootstrap: OKMs have no credential (contract §4)',
  'GET /api/v1/config/{serialNumber}': 'device poll: OKMs have no credential unless per-OKM device tokens are required (contract §4)',
  'POST /api/v1/audit/{serialNumber}': 'device audit intake, same credential as the poll (contract §4)',
  'GET /api/v1/firmware/{kind}/{version}/file': 'firmware download by the devices the poll sends to it (contract §4, §13)',
  'POST /auth/logout': 'sign-out of the session cookie (contract §17): it ends the session only for a valid session and anti-CSRF token, and otherwise clears the cookie',
};

/** Where the contract answers another customer's identifier with something other than 403/404 (contract §7.2 and §8.2, after the original requirements' answers, contract §0.9). */
const SPEC_OTHER_CUSTOMER_ANSWERS: Record<string, { status: number; reason: string }> = {
  'POST /api/v1/acls': { status: 400, reason: 'contract §8.2: an id that exists under another customer is the duplicate-key 400 of contract §0.9' },
  'POST /v1/dlock': { status: 400, reason: 'contract §7.2: a serial number already registered is 400 (the answer of contract §0.9)' },
  'PUT /api/v1/okms/{serial}': { status: 409, reason: 'contract §10: PUT of a serial the caller does not hold is 409 (PUT creates, so a 404 would not fit)' },
  'PATCH /api/v1/okms/{serial}': { status: 409, reason: 'contract §10: PATCH of a serial the caller does not hold is the same 409 as PUT, so the two tell nothing apart' },
};

/** Path parameters that name a customer's resource; `kind` and `version` name the fleet-wide firmware catalog. */
const TENANT_PATH_PARAMETERS = new Set(['serial', 'serialNumber', 'name', 'id']);
const namesTenantResource = (operation: Operation) => pathParameters(operation).some((parameter) => TENANT_PATH_PARAMETERS.has(parameter.name));

const authorization = (credential: string | undefined) => (credential === undefined ? {} : { authorization: `Bearer ${credential}` });

interface Attempt {
  operation: Operation;
  credential: string | undefined;
  path: Record<string, string>;
  query?: Record<string, string>;
  body?: Tenant;
}

forEachDatabase('auth matrix generated from the OpenAPI document', (kind) => {
  let t: TestApp;
  let world: TenantWorld;
  let operations: Operation[];
  let requestsTried = 0;

  const attempt = ({ operation, credential, path, query = {}, body }: Attempt) => {
    requestsTried++;
    const sample = body && sampleBody(operation, body);
    return t.app.inject({
      method: operation.method as 'GET',
      url: urlOf(operation, path, query),
      headers: { ...authorization(credential), ...(sample ? { 'content-type': sample.contentType } : {}) },
      ...(sample ? { payload: sample.payload } : {}),
    });
  };
  const rawAttempt = (operation: Operation, credential: string | undefined, url: string, payload: string) => {
    requestsTried++;
    return t.app.inject({ method: operation.method as 'GET', url, headers: { ...authorization(credential), 'content-type': 'application/json' }, payload });
  };
  const hasCustomerQuery = (operation: Operation) => queryParameters(operation).some((parameter) => parameter.name === 'customer');
  const requiresCustomerQuery = (operation: Operation) => queryParameters(operation).some((parameter) => parameter.name === 'customer' && parameter.required === true);
  const securedOperations = () => operations.filter((operation) => !isPublic(operation));

  before(async () => {
    t = await buildTestApp(kind);
    world = await buildTenantWorld(t);
    operations = await operationsOf(t.app);
  });
  after(async () => {
    console.log(`auth matrix [${kind}]: ${requestsTried} requests tried`);
    await t.close();
  });

  test('the operations without a customer credential in the document (none, or only the device token) are exactly the public ones, and each other one declares a JWT or an API key', () => {
    const undeclared = operations.filter(isPublic).map(operationName);
    const unknownSchemes = securedOperations().filter((operation) => !jwtScopesOf(operation) && !usesApiKey(operation)).map(operationName);

    assert.deepEqual(undeclared.sort(), Object.keys(PUBLIC_OPERATIONS).sort());
    assert.deepEqual(unknownSchemes, []);
  });

  test('the method-not-allowed routes answer 405 to anyone, never 2xx', async () => {
    const answers = [];
    for (const operation of await methodsNotAllowedOf(t.app)) {
      const response = await attempt({ operation, credential: world.adminToken, path: identifiersOf(operation, world.a, world), body: world.a });
      answers.push(`${operationName(operation)} → ${response.statusCode}`);
    }

    assert.ok(answers.length > 0);
    assert.deepEqual(answers.filter((answer) => !answer.endsWith('405')), []);
  });

  test('every JWT operation answers 401 to no token, an expired one, one of another key, alg none and other forgeries, and 403 to one without its scopes', async (context) => {
    const own = await loadActiveSigningKey(t.db, t.app.keyRing);
    const foreign = await generateKeyPair('EdDSA');
    const adminClaims = () =>
      new SignJWT({ scope: 'admin' }).setIssuer(t.settings.jwtIssuer).setAudience(t.settings.jwtAudience).setSubject('admin');
    const now = Math.floor(Date.now() / 1000);
    const refused: Record<string, string> = {
      'no token': '',
      expired: await adminClaims().setProtectedHeader({ alg: own.algorithm, kid: own.kid }).setIssuedAt(now - 7200).setExpirationTime(now - 3600).sign(own.privateKey),
      'another key': await adminClaims().setProtectedHeader({ alg: 'EdDSA', kid: own.kid }).setExpirationTime(now + 3600).sign(foreign.privateKey),
      'wrong audience': await new SignJWT({ scope: 'admin' })
        .setIssuer(t.settings.jwtIssuer)
        .setAudience('someone-else')
        .setProtectedHeader({ alg: own.algorithm, kid: own.kid })
        .setExpirationTime(now + 3600)
        .sign(own.privateKey),
      'no expiry': await adminClaims().setProtectedHeader({ alg: own.algorithm, kid: own.kid }).sign(own.privateKey),
      // The classic confusion: HMAC keyed with the published public key.
      'HS256 keyed with the public JWK': await adminClaims()
        .setProtectedHeader({ alg: 'HS256', kid: own.kid })
        .setExpirationTime(now + 3600)
        .sign(new TextEncoder().encode((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).body)),
      'a customer that does not exist': await new SignJWT({ scope: CUSTOMER_SCOPES.join(' '), customer: 'nobody' })
        .setIssuer(t.settings.jwtIssuer)
        .setAudience(t.settings.jwtAudience)
        .setProtectedHeader({ alg: own.algorithm, kid: own.kid })
        .setExpirationTime(now + 3600)
        .sign(own.privateKey),
      'alg none': `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(
        JSON.stringify({ iss: t.settings.jwtIssuer, aud: t.settings.jwtAudience, sub: 'admin', scope: 'admin', exp: now + 3600 }),
      )}.`,
    };
    const failures: string[] = [];
    let cases = 0;
    const untouched = await snapshotOf(t, world, world.a);

    for (const operation of securedOperations().filter((candidate) => jwtScopesOf(candidate))) {
      const scopes = jwtScopesOf(operation)!;
      const target = { operation, path: identifiersOf(operation, world.a, world), body: world.a };
      for (const [name, token] of Object.entries(refused)) {
        const credential = token === '' ? undefined : token;
        const responses = [await attempt({ ...target, credential })];
        // An invalid body must not be looked at before the token.
        if (Object.keys(operation.requestBody).length > 0) responses.push(await rawAttempt(operation, credential, urlOf(operation, target.path), '{}'));
        for (const response of responses) {
          cases++;
          if (response.statusCode !== 401) failures.push(`${operationName(operation)} with ${name}: ${response.statusCode} ${response.body}`);
        }
      }
      // An operation that asks for no scope (who am I) is any valid credential's: there is nothing to lack.
      const lacking = scopes.length === 0 ? [] : scopes.includes('admin')
        ? [CUSTOMER_SCOPES]
        : [CUSTOMER_SCOPES.filter((scope) => !scopes.includes(scope)), ...scopes.filter(() => scopes.length > 1).map((missing) => scopes.filter((scope) => scope !== missing))];
      for (const tokenScopes of lacking) {
        const token = await issueTestToken(t, { customer: world.a.name, scopes: tokenScopes });
        const response = await attempt({ ...target, credential: token });
        cases++;
        if (response.statusCode !== 403) failures.push(`${operationName(operation)} with scopes ${tokenScopes.join(' ')}: ${response.statusCode} ${response.body}`);
      }
    }

    context.diagnostic(`JWT cases: ${cases}`);
    assert.ok(cases > 100);
    assert.deepEqual(failures, []);
    assert.equal(await snapshotOf(t, world, world.a), untouched);
  });

  test('every API-key operation answers 401 to no key, a malformed key, a revoked key and a JWT', async () => {
    const refused: Record<string, string | undefined> = {
      'no key': undefined,
      'malformed key': 'kf_live_nothex',
      'revoked key': world.revokedApiKey,
      'an admin JWT': world.adminToken,
    };
    const failures: string[] = [];
    let cases = 0;
    const untouched = await snapshotOf(t, world, world.a);

    for (const operation of securedOperations().filter(usesApiKey)) {
      for (const [name, credential] of Object.entries(refused)) {
        // The body must not matter: a valid one, an empty object (item 7 of issue 11), none.
        for (const body of ['sample', '{}', 'none'] as const) {
          const path = identifiersOf(operation, world.a, world);
          const response =
            body === '{}' ? await rawAttempt(operation, credential, urlOf(operation, path), '{}') : await attempt({ operation, credential, path, ...(body === 'sample' ? { body: world.a } : {}) });
          cases++;
          if (response.statusCode !== 401) failures.push(`${operationName(operation)} with ${name}, ${body} body: ${response.statusCode} ${response.body}`);
        }
      }
    }

    assert.ok(cases >= 36);
    assert.deepEqual(failures, []);
    assert.equal(await snapshotOf(t, world, world.a), untouched);
  });

  test('customer B, with its own valid token or API key and A\'s identifiers, gets 403 or 404 on every operation, sees nothing of A, and changes nothing of A', async (context) => {
    const { a, b } = world;
    // A's names, and the serial of the OKM no customer holds (invisible to customer tokens too).
    const namesOfA = [a.name, a.okmSerial, a.aclId, a.lockSerial, a.certificateName, world.unassignedSerial];
    // B's own records, but pointing at A's identifiers: A's ACL id, A's OKM, A's certificate.
    const bPointingAtA: Tenant = { ...b, aclId: a.aclId, okmSerial: a.okmSerial, certificateName: a.certificateName };
    const failures: string[] = [];
    let cases = 0;
    const untouched = await snapshotOf(t, world, a);

    for (const operation of securedOperations()) {
      const credential = usesApiKey(operation) ? b.apiKey : b.token;
      const path = identifiersOf(operation, a, world);
      const variants: Omit<Attempt, 'operation' | 'credential'>[] = [
        { path, body: a, ...(hasCustomerQuery(operation) ? { query: { customer: a.name } } : {}) },
        // Where the customer is a required parameter, B names its own: the request is then about B's records.
        { path, body: bPointingAtA, ...(requiresCustomerQuery(operation) ? { query: { customer: b.name } } : {}) },
      ];
      // Filters that widen a list (`unassigned=true`, `overdue=true`): still nothing of A's, nor the unassigned OKM.
      const flags = queryParameters(operation).filter((parameter) => parameter.schema.type === 'boolean');
      if (flags.length > 0) variants.push({ path, query: Object.fromEntries(flags.map((flag) => [flag.name, 'true'])) });
      for (const variant of variants) {
        const response = await attempt({ operation, credential, ...variant });
        cases++;
        const what = `${operationName(operation)} as ${b.name}${variant.query ? ` ?customer=${variant.query.customer}` : ''} → ${response.statusCode} ${response.body.slice(0, 200)}`;
        const success = response.statusCode >= 200 && response.statusCode < 300;
        const leaked = namesOfA.filter((name) => response.body.includes(name));
        if (success && (namesTenantResource(operation) || leaked.length > 0)) failures.push(`accepted: ${what}`);
        // An operation that names none of A's resources (a list without ?customer=A) may refuse B's request any way it likes.
        const aimsAtA = namesTenantResource(operation) || (variant.query !== undefined && variant.query.customer !== b.name) || variant.body !== undefined && sampleBody(operation, a) !== undefined;
        const allowed = [403, 404, SPEC_OTHER_CUSTOMER_ANSWERS[operationName(operation)]?.status];
        if (!success && aimsAtA && !allowed.includes(response.statusCode)) {
          failures.push(`neither 403 nor 404: ${what}`);
        }
        const snapshot = await snapshotOf(t, world, a);
        if (snapshot !== untouched) failures.push(`changed A's resources: ${what}`);
      }
    }

    context.diagnostic(`other-customer cases: ${cases}`);
    assert.ok(cases > 50);
    assert.deepEqual(failures, []);
  });

  test('customer B cannot reach A\'s resources through the fields of its own records (ACL okm_id, lock serial) and changes nothing of A', async () => {
    const { a, b } = world;
    const untouched = await snapshotOf(t, world, a);
    const ownAcl = { customer: b.name, users: [aclUser(7, [1])], locks: ['GATE-1'] };

    const linkedOnCreate = await call(t, 'POST', '/api/v1/acls', { token: b.token, payload: { ...ownAcl, id: randomUUID(), okm_id: a.okmSerial } });
    const linkedOnReplace = await call(t, 'PUT', `/api/v1/acls/${b.aclId}`, { token: b.token, payload: { ...ownAcl, okm_id: a.okmSerial } });
    const lockTaken = await call(t, 'POST', '/v1/dlock', {
      token: b.apiKey,
      payload: { serial_no: a.lockSerial, type: 'padlock', certificate: b.certificateName, enrolment_code: ENROLMENT_CODE, base64: false },
    });

    assert.deepEqual([linkedOnCreate.statusCode, linkedOnReplace.statusCode, lockTaken.statusCode], [400, 400, 400], [linkedOnCreate.body, linkedOnReplace.body, lockTaken.body].join('\n'));
    assert.equal(await snapshotOf(t, world, a), untouched);
  });

  test('an OKM no customer holds is invisible to a customer token (GET 404, PUT and PATCH 409, no link) and stays unassigned', async () => {
    const serial = world.unassignedSerial;
    const token = world.b.token;

    const got = await call(t, 'GET', `/api/v1/okms/${serial}`, { token });
    const put = await call(t, 'PUT', `/api/v1/okms/${serial}`, { token, payload: { polling_interval: 30 } });
    const patched = await call(t, 'PATCH', `/api/v1/okms/${serial}`, { token, payload: { polling_interval: 30 } });
    const message = await call(t, 'POST', `/api/v1/okms/${serial}/messages`, { token, payload: { type: 'x' } });
    const linked = await call(t, 'POST', '/api/v1/acls', { token, payload: { customer: world.b.name, users: [], locks: [], okm_id: serial } });
    const listed = await call(t, 'GET', '/api/v1/okms', { token });
    const record = await call(t, 'GET', `/api/v1/okms/${serial}`, { token: world.adminToken });

    assert.deepEqual(
      [got.statusCode, put.statusCode, patched.statusCode, message.statusCode, linked.statusCode],
      [404, 409, 409, 404, 400],
      [got, put, patched, message, linked].map((response) => response.body).join('\n'),
    );
    assert.doesNotMatch(listed.body, new RegExp(serial));
    assert.equal(record.json().data.customer, null);
    assert.equal(record.json().data.polling_interval, null);
  });
});
