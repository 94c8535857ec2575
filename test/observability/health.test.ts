import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

forEachDatabase('health probes', (kind) => {
  let subject: TestApp;
  before(async () => {
    subject = await buildTestApp(kind);
  });
  after(() => subject.close());

  test('/healthz and /readyz answer 200 while the database answers', async () => {
    const health = await subject.app.inject({ method: 'GET', url: '/healthz' });
    const ready = await subject.app.inject({ method: 'GET', url: '/readyz' });

    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { status: 'ok' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ok' });
  });
});

forEachDatabase('health probes without a database', (kind) => {
  test('when the database is gone, /readyz is 503 and /healthz still 200', async () => {
    const subject = await buildTestApp(kind);
    try {
      await subject.db.destroy();

      const ready = await subject.app.inject({ method: 'GET', url: '/readyz' });
      const health = await subject.app.inject({ method: 'GET', url: '/healthz' });

      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json().error_code, 'NOT_READY');
      assert.match(ready.json().error_msg, /^database unreachable: /);
      assert.equal(health.statusCode, 200);
    } finally {
      await subject.app.close();
      await subject.database.drop();
    }
  });
});
