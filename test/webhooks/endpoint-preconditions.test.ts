import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call } from '../okm/admin-helpers.ts';

const ENDPOINTS = '/api/v1/webhook-endpoints';
const RACE_ROUNDS = 25;

forEachDatabase('webhook endpoint preconditions (If-Match, RFC 9110)', (kind) => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await buildTestApp(kind);
    token = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
  });
  after(() => t.close());

  async function endpoint() {
    const created = await call(t, 'POST', ENDPOINTS, { token, payload: { url: 'https://hooks.example/fleet', event_types: ['okm.overdue'] } });
    assert.equal(created.statusCode, 201);
    return { id: created.json().data.id as number, etag: created.headers.etag as string };
  }
  const patch = (id: number, body: object, etag?: string) => call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token, payload: body, ...(etag === undefined ? {} : { headers: { 'if-match': etag } }) });
  const remove = (id: number, etag?: string) => call(t, 'DELETE', `${ENDPOINTS}/${id}`, { token, ...(etag === undefined ? {} : { headers: { 'if-match': etag } }) });

  test('creation, reads and changes answer with the ETag of the version they hold', async () => {
    const { id, etag } = await endpoint();

    const read = await call(t, 'GET', `${ENDPOINTS}/${id}`, { token });
    const changed = await patch(id, { url: 'https://hooks.example/other' }, etag);

    assert.equal(read.headers.etag, etag);
    assert.equal(changed.statusCode, 200);
    assert.notEqual(changed.headers.etag, etag);
    assert.equal((await call(t, 'GET', `${ENDPOINTS}/${id}`, { token })).headers.etag, changed.headers.etag);
    await remove(id);
  });

  test('a stale If-Match on PATCH and DELETE is a 412 with the current endpoint; nothing changes', async () => {
    const { id, etag } = await endpoint();
    const theirs = await patch(id, { event_types: ['okm.stuck'] });

    const stalePatch = await patch(id, { url: 'https://hooks.example/mine' }, etag);
    const staleDelete = await remove(id, etag);

    for (const response of [stalePatch, staleDelete]) {
      assert.equal(response.statusCode, 412);
      assert.equal(response.headers.etag, theirs.headers.etag);
      assert.deepEqual(response.json(), { error_code: 'PRECONDITION_FAILED', error_msg: response.json().error_msg, current: theirs.json().data });
    }
    assert.equal((await call(t, 'GET', `${ENDPOINTS}/${id}`, { token })).json().data.url, 'https://hooks.example/fleet');
    assert.equal((await remove(id, theirs.headers.etag as string)).statusCode, 204);
  });

  test('* matches, a weak tag does not, a malformed value is a 400, none is unconditional; a missing endpoint stays a 404', async () => {
    const { id, etag } = await endpoint();

    assert.equal((await patch(id, { event_types: ['okm.stuck'] }, `W/${etag}`)).statusCode, 412);
    assert.equal((await patch(id, { event_types: ['okm.stuck'] }, 'W/')).statusCode, 400);
    assert.equal((await patch(id, { event_types: ['okm.stuck'] }, '*')).statusCode, 200);
    assert.equal((await patch(id, { event_types: ['okm.overdue'] })).statusCode, 200);
    assert.equal((await remove(id, '*')).statusCode, 204);
    assert.equal((await remove(id, '*')).statusCode, 404);
  });

  test('two writers racing with the same If-Match: exactly one wins', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { id, etag } = await endpoint();
      const [first, second] = await Promise.all([patch(id, { url: 'https://hooks.example/one' }, etag), patch(id, { url: 'https://hooks.example/two' }, etag)]);
      assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 412], `round ${round}`);
      const [winner, loser] = first.statusCode === 200 ? [first, second] : [second, first];
      assert.deepEqual(loser.json().current, winner.json().data);
      await remove(id);
    }
  });

  test('a change racing a delete with the same If-Match: one of them wins', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { id, etag } = await endpoint();
      const [changed, deleted] = await Promise.all([patch(id, { url: 'https://hooks.example/one' }, etag), remove(id, etag)]);
      const outcome = `${changed.statusCode}/${deleted.statusCode}`;
      assert.ok(outcome === '200/412' || outcome === '404/204', `round ${round}: ${outcome}`);
      if (deleted.statusCode !== 204) await remove(id);
    }
  });
});
