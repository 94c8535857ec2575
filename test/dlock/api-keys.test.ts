import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createCustomer } from '../../src/customers/service.ts';
import { requireApiKey } from '../../src/dlock/api-key-auth.ts';
import { LAST_USED_RESOLUTION_MS, checkApiKey, createApiKey, revokeApiKey } from '../../src/dlock/api-keys.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { storedBytes } from '../pki/helpers.ts';

/** A stand-in for the DLock routes (a later part of issue 4): an API-key route under /v1. */
function addWhoAmIRoute(app: FastifyInstance): void {
  app.get('/v1/test-whoami', { config: { errorShape: 'dlock' }, preHandler: requireApiKey }, async (request) => ({
    customer: request.apiKeyOwner!.customer,
    key_id: request.apiKeyOwner!.keyId,
  }));
}

forEachDatabase('DLock API keys', (kind) => {
  let t: TestApp;
  const whoAmI = (authorization?: string) =>
    t.app.inject({ method: 'GET', url: '/v1/test-whoami', headers: authorization === undefined ? {} : { authorization } });
  const lastUsed = async (id: string) => {
    const row = await t.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow();
    return row.last_used_at === null ? null : Number(row.last_used_at);
  };

  before(async () => {
    t = await buildTestApp(kind, {}, addWhoAmIRoute);
    await createCustomer(t.db, 'acme');
    await createCustomer(t.db, 'globex');
  });
  after(() => t.close());

  test('a new key has the kf_live_ prefix, its id, and 32 random bytes', async () => {
    const created = await createApiKey(t.db, { customer: 'acme', label: 'mobile app' });

    assert.match(created.id, /^[0-9a-f]{16}$/);
    assert.match(created.key, /^kf_live_[0-9a-f]{16}[A-Za-z0-9_-]{43}$/);
    assert.ok(created.key.startsWith(`kf_live_${created.id}`));
    assert.equal(created.label, 'mobile app');
  });

  test('a valid key is accepted and the request acts for the key owner', async () => {
    const acme = await createApiKey(t.db, { customer: 'acme' });
    const globex = await createApiKey(t.db, { customer: 'globex' });

    const asAcme = await whoAmI(`Bearer ${acme.key}`);
    const asGlobex = await whoAmI(`Bearer ${globex.key}`);

    assert.equal(asAcme.statusCode, 200);
    assert.deepEqual(asAcme.json(), { customer: 'acme', key_id: acme.id });
    assert.deepEqual(asGlobex.json(), { customer: 'globex', key_id: globex.id });
  });

  test('a revoked key gets 401 with the DLock error body', async () => {
    const created = await createApiKey(t.db, { customer: 'acme' });
    assert.equal((await whoAmI(`Bearer ${created.key}`)).statusCode, 200);

    await revokeApiKey(t.db, created.id);
    const response = await whoAmI(`Bearer ${created.key}`);

    assert.equal(response.statusCode, 401);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(response.json(), { status: 401, msg: 'Access token invalid or revoked' });
  });

  test('a missing, malformed or wrong key gets 401 with the DLock error body naming why', async () => {
    const created = await createApiKey(t.db, { customer: 'acme' });
    const wrongSecret = created.key.slice(0, -4) + (created.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const unknownId = `kf_live_${'0'.repeat(16)}${created.key.slice(-43)}`;

    const cases: Array<[string | undefined, string]> = [
      [undefined, 'Missing access token'],
      ['', 'Missing access token'],
      [`Basic ${created.key}`, 'Malformed access token'],
      ['Bearer', 'Malformed access token'],
      ['Bearer kf_live_short', 'Malformed access token'],
      [`Bearer ${created.key}x`, 'Malformed access token'],
      [`Bearer ${wrongSecret}`, 'Access token invalid or revoked'],
      [`Bearer ${unknownId}`, 'Access token invalid or revoked'],
    ];

    for (const [authorization, msg] of cases) {
      const response = await whoAmI(authorization);
      assert.equal(response.statusCode, 401, String(authorization));
      assert.deepEqual(response.json(), { status: 401, msg }, String(authorization));
    }
  });

  test('routes without the DLock error shape still answer {error_code, error_msg}', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/v1/no-such-route' });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(Object.keys(response.json()).sort(), ['error_code', 'error_msg']);
  });

  test('the last use is recorded, at most once per minute', async () => {
    const created = await createApiKey(t.db, { customer: 'acme' });
    assert.equal(await lastUsed(created.id), null);

    const start = Date.now();
    await checkApiKey(t.db, created.key, start);
    await checkApiKey(t.db, created.key, start + 1_000);
    const afterTwoUses = await lastUsed(created.id);
    await checkApiKey(t.db, created.key, start + LAST_USED_RESOLUTION_MS);
    const aMinuteLater = await lastUsed(created.id);

    assert.equal(afterTwoUses, start);
    assert.equal(aMinuteLater, start + LAST_USED_RESOLUTION_MS);
  });

  test('a request through the route records the last use', async () => {
    const created = await createApiKey(t.db, { customer: 'globex' });
    const before = Date.now();

    await whoAmI(`Bearer ${created.key}`);

    const recorded = await lastUsed(created.id);
    assert.ok(recorded !== null && recorded >= before && recorded <= Date.now());
  });

  test('revoking an unknown or malformed id is refused; revoking twice keeps the first time', async () => {
    const created = await createApiKey(t.db, { customer: 'acme' });

    const first = await revokeApiKey(t.db, created.id);
    const second = await revokeApiKey(t.db, created.id);

    assert.equal(second.revokedAt, first.revokedAt);
    await assert.rejects(revokeApiKey(t.db, 'f'.repeat(16)), { statusCode: 404, message: `API key ${'f'.repeat(16)} not found` });
    await assert.rejects(revokeApiKey(t.db, 'nope'), { statusCode: 400 });
  });

  test('creating a key for an unknown customer is refused', async () => {
    await assert.rejects(createApiKey(t.db, { customer: 'nobody' }), { statusCode: 400, message: 'customer: unknown customer nobody' });
  });

  test('only a hash of the key is stored, never the key or its secret part', async () => {
    const created = await createApiKey(t.db, { customer: 'acme' });

    const stored = await storedBytes(kind, t.db, t.database.dataDir, ['api_keys', 'customers']);

    assert.ok(stored.includes(Buffer.from(created.id)));
    assert.ok(!stored.includes(Buffer.from(created.key)));
    assert.ok(!stored.includes(Buffer.from(created.key.slice(-43))));
  });
});
