import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import Fastify, { type FastifyInstance } from 'fastify';
import app from '../../src/app.ts';
import { validatorCompiler } from '../../src/http/validation.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: Record<string, string[]>[]; responses: Record<string, unknown>; parameters?: unknown[] }>>;
  components: { securitySchemes: Record<string, unknown> };
}

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

  test('operations state their security scheme and scopes, taken from the guard the route runs', () => {
    assert.deepEqual(document.paths['/v1/dlock']!.post!.security, [{ apiKey: [] }]);
    assert.deepEqual(document.paths['/api/v1/okms/{serial}']!.get!.security, [{ jwt: ['okm:read'] }]);
    assert.equal(document.paths['/api/v1/config/{serialNumber}']!.get!.security, undefined);
    assert.ok(document.components.securitySchemes.jwt);
  });

  test('error responses are documented in the shape the route answers them', () => {
    const propertiesOf = (response: unknown) =>
      Object.keys((response as { content: { 'application/json': { schema: { properties: object } } } }).content['application/json'].schema.properties).sort();

    assert.deepEqual(propertiesOf(document.paths['/v1/dlock']!.post!.responses['401']), ['msg', 'status']);
    assert.deepEqual(propertiesOf(document.paths['/api/v1/okms/{serial}']!.get!.responses['403']), ['error_code', 'error_msg']);
  });

  test('/docs serves the interactive documentation page', async () => {
    const response = await subject.app.inject({ method: 'GET', url: '/docs' });
    const page = response.statusCode === 302 ? await subject.app.inject({ method: 'GET', url: String(response.headers.location) }) : response;

    assert.equal(page.statusCode, 200);
    assert.match(page.body, /swagger-ui/i);
  });
});
