import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

/** What a defective route of the app answers, set per test: the app's own route, made to break its documented contract. */
let defect: { route: string; statusCode: number; body: unknown; type?: string } | undefined;

let t: TestApp;
before(async () => {
  t = await buildTestApp('sqlite', {}, (app) => {
    app.addHook('preHandler', async (request, reply) => {
      if (defect && request.routeOptions.url === defect.route) return reply.code(defect.statusCode).type(defect.type ?? 'application/json; charset=utf-8').send(defect.body);
    });
  });
});
after(() => t.close());

const probe = async (url = '/healthz') => (await t.app.inject({ method: 'GET', url })).json() as { error_code?: string; error_msg?: string };
const POLL = '/api/v1/config/:serialNumber';

test('an answer that keeps to the document passes the conformance check unchanged', async () => {
  defect = undefined;

  assert.deepEqual(await probe(), { status: 'ok' });
});

test('a status the document does not declare for the operation is turned into a 500 naming it, so the test that got it fails', async () => {
  defect = { route: '/healthz', statusCode: 418, body: { status: 'ok' } };

  const answer = await probe();

  assert.equal(answer.error_code, 'OPENAPI_CONFORMANCE');
  assert.match(answer.error_msg!, /GET \/healthz answered 418, a status the document does not declare/);
});

test('a body that does not match the declared schema, or an undeclared media type, is a 500 naming it', async () => {
  // The poll's reply is documented, not serialized through a schema: a handler could send anything.
  defect = { route: POLL, statusCode: 200, body: { pollingInterval: 'often' } };
  const wrongBody = await probe('/api/v1/config/CONFORMANCE-1');
  defect = { route: POLL, statusCode: 200, body: '{}', type: 'text/plain' };
  const wrongType = await probe('/api/v1/config/CONFORMANCE-1');

  assert.match(wrongBody.error_msg!, /does not match the document/);
  assert.match(wrongType.error_msg!, /as text\/plain, where the document declares application\/json/);
});
