import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

forEachDatabase('unknown routes', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('an unknown route answers 404 with a JSON error naming it', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/nope?x=1' });

    assert.equal(response.statusCode, 404);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(response.json(), { error_code: 'NOT_FOUND', error_msg: 'Route GET /nope not found' });
  });
});
