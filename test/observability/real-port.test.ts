import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';

forEachDatabase('operations endpoints of keyfleet serve on a real port', (kind) => {
  let store: TestStore;
  let server: ServerProcess;
  let base: string;
  before(async () => {
    store = await openTestStore(kind);
    server = serveProcess({ ...store.database.env, RATE_LIMIT_DEVICE_PER_MINUTE: '2' });
    base = await server.listening;
  });
  after(async () => {
    await server.stop();
    await store.close();
  });

  test('/healthz, /readyz, /metrics and /openapi.json answer', async () => {
    const get = (path: string) => fetch(`${base}${path}`);
    const [health, ready, metrics, openapi] = await Promise.all([get('/healthz'), get('/readyz'), get('/metrics'), get('/openapi.json')]);

    assert.deepEqual([health.status, ready.status, metrics.status, openapi.status], [200, 200, 200, 200]);
    assert.match(await metrics.text(), /keyfleet_http_request_duration_seconds_bucket/);
    assert.equal(((await openapi.json()) as { openapi: string }).openapi, '3.1.0');
  });

  test('the device rate limit answers 429 with Retry-After over the socket', async () => {
    const statuses = [];
    for (let poll = 0; poll < 3; poll++) statuses.push((await fetch(`${base}/api/v1/config/REAL-PORT-1`)).status);

    const limited = await fetch(`${base}/api/v1/config/REAL-PORT-1`);

    assert.deepEqual(statuses.slice(0, 2).sort(), [200, 204]);
    assert.equal(limited.status, 429);
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal(limited.headers.get('content-type'), 'application/json; charset=utf-8');
  });
});
