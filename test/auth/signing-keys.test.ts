import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet, type JWK } from 'jose';
import { ensureActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { issueToken } from '../../src/auth/tokens.ts';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { open } from '../../src/secrets/sealed-box.ts';
import { buildServer } from '../../src/server.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { createTestCustomer } from '../helpers/tokens.ts';

forEachDatabase('deployment signing key and JWKS', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('the JWKS lists the public Ed25519 key with kid, alg and use, and no private part', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    const { keys } = response.json<JSONWebKeySet>();
    assert.equal(keys.length, 1);
    assert.deepEqual(Object.keys(keys[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    assert.equal(keys[0]!.alg, 'EdDSA');
    assert.equal(keys[0]!.crv, 'Ed25519');
    assert.equal(keys[0]!.use, 'sig');
  });

  test('a token from issueToken verifies against the served JWKS with the configured issuer and audience', async () => {
    await createTestCustomer(t, 'acme');
    const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<JSONWebKeySet>();

    const { token, expiresAt } = await issueToken(t.db, t.app.keyRing, t.settings, {
      customer: 'acme',
      scopes: ['acl:read', 'okm:read'],
      ttlSeconds: 900,
    });

    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: t.settings.jwtIssuer,
      audience: t.settings.jwtAudience,
    });
    assert.equal(protectedHeader.kid, jwks.keys[0]!.kid);
    assert.equal(payload.customer, 'acme');
    assert.equal(payload.scope, 'acl:read okm:read');
    assert.equal(payload.sub, 'customer:acme');
    assert.equal(payload.exp, expiresAt);
    assert.equal(payload.exp! - payload.iat!, 900);
    assert.match(payload.jti!, /^[0-9a-f-]{36}$/);
  });

  test('the stored signing key holds its private part only sealed', async () => {
    const [row] = await t.db.selectFrom('signing_keys').selectAll().execute();
    const privateJwk = JSON.parse((await open(t.app.keyRing, row!.private_jwk_sealed, row!.kid)).toString('utf8')) as JWK;

    assert.ok(privateJwk.d);
    assert.ok(!row!.private_jwk_sealed.includes(privateJwk.d));
    assert.ok(!row!.public_jwk.includes(privateJwk.d));
  });

  test('a second server on the same database reuses the key instead of making another', async () => {
    const second = await buildServer({ settings: t.settings, db: t.db, dialect: t.dialect, keyRing: t.app.keyRing });
    await second.ready();

    const first = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<JSONWebKeySet>();
    const again = (await second.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json<JSONWebKeySet>();
    await second.close();

    assert.deepEqual(again, first);
  });

  test('processes creating the key at the same moment end up with a single active key', async () => {
    const database = await createTestDatabase(kind);
    const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
    const { db, dialect } = openDatabase(dialectFor(settings));
    await migrateToLatest(db, dialect);
    const keyRing = createKeyRing(db, loadMasterKey(settings));

    try {
      await Promise.all(Array.from({ length: 8 }, () => ensureActiveSigningKey(db, keyRing)));

      const rows = await db.selectFrom('signing_keys').select('kid').execute();
      assert.equal(rows.length, 1);
      const { token } = await issueToken(db, keyRing, settings, { scopes: ['admin'], ttlSeconds: 60 });
      assert.equal(decodeProtectedHeader(token).kid, rows[0]!.kid);
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
