import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { serveProcess } from '../helpers/server-process.ts';

const INSTALL_CODE = '8675309421';
const PIN_HASH = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

interface LogLine {
  reqId?: string;
  msg: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
  actor?: { kind: string; id: string; name: string };
}

forEachDatabase('request log', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
  });
  after(() => store.close());

  test('at debug, each request is one JSON line with its request id and its actor, and no token, key, PIN hash or install code is in the log', async () => {
    const keyfleet = async (...args: string[]) => JSON.parse((await runKeyfleet(store.database.env, ...args, '--json')).stdout);
    await keyfleet('customer', 'create', 'acme');
    const { token, id: tokenId } = await keyfleet('token', 'issue', '--customer', 'acme', '--scope', 'okm:read okm:write', '--name', 'log test');
    const { key: apiKey, id: keyId } = await keyfleet('apikey', 'create', '--customer', 'acme');
    const server = serveProcess({ ...store.database.env, LOG_LEVEL: 'debug' });
    const base = await server.listening;
    const jwt = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    let poll: Response;
    try {
      poll = await fetch(`${base}/api/v1/config/LOG-OKM-1?installCode=${INSTALL_CODE}&cacheMode=1`, { headers: { 'x-request-id': 'trace-me-42' } });
      const claim = await fetch(`${base}/api/v1/okms/LOG-OKM-1/claim`, { method: 'POST', headers: jwt, body: JSON.stringify({ install_code: INSTALL_CODE }) });
      assert.equal(claim.status, 200);
      const put = await fetch(`${base}/api/v1/okms/LOG-OKM-1`, {
        method: 'PUT',
        headers: jwt,
        body: JSON.stringify({ users_assets: [{ user_id: 7, pin_hash: PIN_HASH }] }),
      });
      assert.ok(put.ok);
      assert.equal((await fetch(`${base}/api/v1/okms/LOG-OKM-1`, { headers: jwt })).status, 200);
      assert.equal((await fetch(`${base}/v1/dlock/NO-SUCH-LOCK`, { headers: { authorization: `Bearer ${apiKey}` } })).status, 404);
      assert.equal((await fetch(`${base}/api/v1/okms`, { headers: { authorization: 'Bearer not-a-jwt' } })).status, 401);
    } finally {
      assert.equal(await server.stop(), 0);
    }

    const log = server.output();
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as LogLine);
    const requestLines = lines.filter((line) => line.msg === 'request completed');
    const traced = lines.filter((line) => line.reqId === 'trace-me-42');
    assert.equal(poll.headers.get('x-request-id'), 'trace-me-42');
    assert.equal(requestLines.length, 6);
    assert.equal(traced.length, 1);
    assert.equal(traced[0]!.req!.url, '/api/v1/config/LOG-OKM-1?installCode=[redacted]&cacheMode=1');
    assert.equal(traced[0]!.res!.statusCode, 204);
    // Who made each request (contract §17): the token by its id, the API key by its id; nobody for the device poll and the refused token.
    assert.deepEqual(
      requestLines.map((line) => line.actor && `${line.actor.kind}:${line.actor.id}`),
      [undefined, `token:${tokenId}`, `token:${tokenId}`, `token:${tokenId}`, `api_key:${keyId}`, undefined],
    );
    for (const secret of [INSTALL_CODE, PIN_HASH, token, token.split('.')[2]!, apiKey, apiKey.slice(-43), 'PRIVATE KEY', 'not-a-jwt']) {
      assert.equal(log.includes(secret), false, `found ${secret.slice(0, 12)}… in the log`);
    }
  });

  test('at the default level, device calls are summed up in one line (on close, and every minute), while API requests get a line each', async () => {
    const server = serveProcess({ ...store.database.env, LOG_LEVEL: 'info' });
    const base = await server.listening;
    try {
      assert.equal((await fetch(`${base}/api/v1/config/LOG-OKM-2?installCode=${INSTALL_CODE}`)).status, 204);
      assert.equal((await fetch(`${base}/api/v1/config/LOG-OKM-2?installCode=${INSTALL_CODE}`)).status, 200);
      assert.equal((await fetch(`${base}/api/v1/config/bad%20serial`)).status, 400);
      assert.equal((await fetch(`${base}/api/v1/okms`, { headers: { authorization: 'Bearer not-a-jwt' } })).status, 401);
    } finally {
      assert.equal(await server.stop(), 0);
    }

    const lines = server.output().trim().split('\n').map((line) => JSON.parse(line) as LogLine & { deviceCalls?: number; statuses?: Record<string, number> });
    const requestLines = lines.filter((line) => line.msg === 'request completed');
    assert.deepEqual(requestLines.map((line) => line.req?.url), ['/api/v1/okms']);
    const summaries = lines.filter((line) => line.msg === 'device calls');
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.deviceCalls, 3);
    assert.deepEqual(summaries[0]!.statuses, { '204': 1, '200': 1, '400': 1 });
    assert.equal(server.output().includes(INSTALL_CODE), false);
  });

  test('a request without a usable X-Request-Id gets a generated one, returned in the header', async () => {
    const server = serveProcess(store.database.env);
    const base = await server.listening;
    try {
      const response = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'has spaces and is "odd"' } });

      assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    } finally {
      await server.stop();
    }
  });
});
