import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import Fastify, { type FastifyInstance } from 'fastify';
import app from '../../src/app.ts';
import { validatorCompiler } from '../../src/http/validation.ts';
import { REPORTED_PARAMETERS } from '../../src/shared/reported-values.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

interface MediaType {
  schema: Record<string, unknown>;
}

interface DocumentedOperation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  responses: Record<string, { description: string; content?: Record<string, MediaType> }>;
  parameters?: { in: string; name: string; description?: string; schema: Record<string, unknown> }[];
  requestBody?: { content: Record<string, MediaType> };
}

interface OpenApiDocument {
  openapi: string;
  servers?: { url: string }[];
  paths: Record<string, Record<string, DocumentedOperation>>;
  components: { securitySchemes: Record<string, { bearerFormat?: string }>; schemas: Record<string, { properties?: Record<string, unknown> }> };
  'x-methods-not-allowed': { method: string; path: string; allow: string }[];
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** `/v1/dlock/:serial` → `/v1/dlock/{serial}`, as OpenAPI writes paths. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1');

forEachDatabase('OpenAPI document', (kind) => {
  let subject: TestApp;
  let document: OpenApiDocument;
  before(async () => {
    subject = await buildTestApp(kind);
    document = (await subject.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  after(() => subject.close());

  test('/openapi.json is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(structuredClone(document) as never);

    assert.equal(document.openapi, '3.1.0');
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
  });

  test('every registered route is in the document, with the method it answers', async () => {
    const routes: { method: string; url: string }[] = [];
    const bare: FastifyInstance = Fastify({ logger: false });
    bare.setValidatorCompiler(validatorCompiler);
    bare.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (!route.schema?.hide) for (const method of methods) if (method !== 'HEAD') routes.push({ method: method.toLowerCase(), url: route.url });
    });
    await bare.register(app, { settings: subject.settings, db: subject.db, dialect: subject.dialect, keyRing: subject.app.keyRing });
    await bare.ready();
    await bare.close();

    const missing = routes.filter(({ method, url }) => !document.paths[openApiPath(url)]?.[method]);
    assert.ok(routes.length > 20);
    assert.deepEqual(missing, []);
  });

  test('operations state their security scheme and scopes, taken from the guard the route runs: a DLock API key is not a JWT, and the device token is optional', () => {
    assert.deepEqual(document.paths['/v1/dlock']!.post!.security, [{ dlockApiKey: [] }]);
    assert.deepEqual(document.paths['/api/v1/okms/{serial}']!.get!.security, [{ jwt: ['okm:read'] }]);
    assert.deepEqual(document.paths['/api/v1/config/{serialNumber}']!.get!.security, [{}, { deviceToken: [] }]);
    assert.deepEqual(document.paths['/api/v1/audit/{serialNumber}']!.post!.security, [{}, { deviceToken: [] }]);
    assert.deepEqual(document.paths['/healthz']!.get!.security, []);
    assert.equal(document.components.securitySchemes.jwt!.bearerFormat, 'JWT');
    assert.equal(document.components.securitySchemes.dlockApiKey!.bearerFormat, 'kf_live_…');
  });

  test('error responses are documented in the shape the route answers them', () => {
    const propertiesOf = (response: { content?: Record<string, MediaType> }) => {
      const reference = String(response.content!['application/json']!.schema.$ref);
      return Object.keys(document.components.schemas[reference.replace('#/components/schemas/', '')]!.properties!).sort();
    };

    assert.deepEqual(propertiesOf(document.paths['/v1/dlock']!.post!.responses['401']!), ['msg', 'status']);
    assert.deepEqual(propertiesOf(document.paths['/api/v1/okms/{serial}']!.get!.responses['403']!), ['error_code', 'error_msg']);
  });

  test('every operation has a unique camelCase operationId, a summary, a tag, a success response, and each error status spelt out (no 4XX wildcard)', () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item).filter(([name]) => HTTP_METHODS.includes(name))) {
        const name = `${method.toUpperCase()} ${path}`;
        if (!/^[a-z][A-Za-z0-9]*$/.test(operation.operationId ?? '')) problems.push(`${name}: operationId ${operation.operationId}`);
        if (seen.has(operation.operationId ?? '')) problems.push(`${name}: operationId ${operation.operationId} twice`);
        seen.add(operation.operationId ?? '');
        if (!operation.summary) problems.push(`${name}: no summary`);
        if (!operation.tags?.length) problems.push(`${name}: no tag`);
        const statuses = Object.keys(operation.responses);
        if (!statuses.some((status) => /^[23]\d\d$/.test(status))) problems.push(`${name}: no success response`);
        if (statuses.some((status) => !/^\d{3}$/.test(status))) problems.push(`${name}: wildcard status in ${statuses.join(',')}`);
        if (statuses.some((status) => operation.responses[status]!.description === 'Default Response')) problems.push(`${name}: a response without description`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test('the document names a server and its shared schemas, and refers to them: one OKM record, one ACL with typed users', () => {
    const text = JSON.stringify(document.paths);
    const aclUsers = document.components.schemas.Acl!.properties!.users as { items: { $ref: string } };

    assert.ok(document.servers?.length);
    for (const name of ['Error', 'DlockError', 'OkmRecord', 'Acl', 'AclUser', 'FirmwareRelease', 'PollReply', 'DlockKeyCertificate', 'Pagination']) {
      assert.ok(text.includes(`"#/components/schemas/${name}"`) || JSON.stringify(document.components.schemas).includes(`"#/components/schemas/${name}"`), name);
    }
    assert.equal(aclUsers.items.$ref, '#/components/schemas/AclUser');
    assert.ok(!text.includes('"serial_number":{"type":"string"}'), 'the OKM record is not repeated inline');
  });

  test('the device protocol is documented: bootstrap, the 14 poll parameters with their meaning, 200 and 204, the audit body and its 201', () => {
    const poll = document.paths['/api/v1/config/{serialNumber}']!.get!;
    const audit = document.paths['/api/v1/audit/{serialNumber}']!.post!;
    const query = (poll.parameters ?? []).filter((parameter) => parameter.in === 'query');

    assert.deepEqual(query.map((parameter) => parameter.name).sort(), [...REPORTED_PARAMETERS].sort());
    assert.deepEqual(query.filter((parameter) => !parameter.description?.includes('never a 4xx')).map((parameter) => parameter.name), []);
    assert.equal(poll.responses['200']!.content!['application/json']!.schema.$ref, '#/components/schemas/PollReply');
    assert.equal(poll.responses['204']!.content, undefined);
    assert.ok(audit.requestBody!.content['application/json']);
    assert.deepEqual(Object.keys((audit.responses['201']!.content!['application/json']!.schema.properties as object)), ['count']);
    assert.ok(document.paths['/embeddedv1/kas/config']!.get!.responses['200']!.content!['application/json']);
  });

  test('the documented poll parameters are never enforced: malformed, repeated or empty values still get 204 (new OKM) and then 200', async () => {
    const malformed = new URLSearchParams();
    for (const name of REPORTED_PARAMETERS) {
      malformed.append(name, 'not-a-number-{}');
      malformed.append(name, '');
    }
    const answers: number[] = [];
    for (const query of [malformed.toString(), REPORTED_PARAMETERS.map((name) => `${name}=%FF%FE`).join('&'), REPORTED_PARAMETERS.map((name) => `${name}[x]=1`).join('&')]) {
      const serial = `MALFORMED-${answers.length}`;
      answers.push((await subject.app.inject({ method: 'GET', url: `/api/v1/config/${serial}?${query}` })).statusCode);
      answers.push((await subject.app.inject({ method: 'GET', url: `/api/v1/config/${serial}?${query}` })).statusCode);
    }

    assert.deepEqual(answers, [204, 200, 204, 200, 204, 200]);
  });

  test('firmware files are binary: the upload takes application/octet-stream, the download answers it (200, 206) with 304 and 416', () => {
    const upload = document.paths['/api/v1/firmware/{kind}/{version}']!.put!;
    const download = document.paths['/api/v1/firmware/{kind}/{version}/file']!.get!;

    assert.deepEqual(Object.keys(upload.requestBody!.content), ['application/octet-stream']);
    assert.deepEqual(Object.keys(download.responses['200']!.content!), ['application/octet-stream']);
    assert.deepEqual(Object.keys(download.responses['206']!.content!), ['application/octet-stream']);
    assert.ok(download.responses['304'] && download.responses['416']);
  });

  test('DLock enrolment, fetch, delete and the certificate chain declare their success bodies; 409 is declared where records can conflict', () => {
    const keyOf = (operation: DocumentedOperation) => JSON.stringify(operation.responses['200']!.content!['application/json']!.schema);

    assert.match(keyOf(document.paths['/v1/dlock']!.post!), /DlockKeyCertificate/);
    assert.match(keyOf(document.paths['/v1/dlock/{serial}']!.get!), /DlockKeyCertificate/);
    assert.ok(document.paths['/v1/dlock/{serial}']!.delete!.responses['204']);
    assert.match(keyOf(document.paths['/v1/certificates/{name}']!.get!), /chain/);
    assert.ok(document.paths['/api/v1/acls']!.post!.responses['409']);
  });

  test('the methods that only answer 405 are not operations a client can call, and the document lists them with their Allow', async () => {
    const listed = document['x-methods-not-allowed'];

    assert.ok(listed.length >= 9);
    for (const { method, path, allow } of listed) {
      assert.equal(document.paths[path]?.[method.toLowerCase()], undefined, `${method} ${path} is an operation`);
      const response = await subject.app.inject({ method: method as 'GET', url: path.replace(/\{[^}]+\}/g, 'x1') });
      assert.equal(response.statusCode, 405, `${method} ${path}`);
      assert.equal(response.headers.allow, allow);
    }
  });

  test('/docs serves the interactive documentation page', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/docs' });
    const page = response.statusCode === 302 ? await subject.app.inject({ method: 'GET', url: String(response.headers.location) }) : response;

    assert.equal(page.statusCode, 200);
    assert.match(page.body, /swagger-ui/i);
  });
});
