import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { loadPublicJwks } from '../../src/auth/signing-keys.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

forEachDatabase('keyfleet console', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
    // Through the CLI, which also migrates the new database.
    const created = await runKeyfleet(store.database.env, 'customer', 'create', 'acme');
    assert.equal(created.exitCode, 0, created.stderr);
  });
  after(() => store.close());

  const keyfleet = (env: Record<string, string>, ...args: string[]) => runKeyfleet({ ...store.database.env, ...env }, 'console', ...args);
  const payloadOf = async (url: string) => {
    const token = new URL(url).hash.replace(/^#token=/, '');
    return (await jwtVerify(token, createLocalJWKSet(await loadPublicJwks(store.db)), { issuer: store.settings.jwtIssuer, audience: store.settings.jwtAudience })).payload;
  };

  test('--customer prints BASE/console/#token= with every scope a customer may hold, for 8 hours by default', async () => {
    const run = await keyfleet({}, '--customer', 'acme', '--url', 'https://fleet.example.com/', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    const printed = JSON.parse(run.stdout) as { url: string; expires_at: number };
    assert.deepEqual(Object.keys(printed), ['url', 'expires_at']);
    assert.match(printed.url, /^https:\/\/fleet\.example\.com\/console\/#token=[\w-]+\.[\w-]+\.[\w-]+$/);
    const payload = await payloadOf(printed.url);
    assert.equal(payload.customer, 'acme');
    assert.equal(payload.scope, 'okm:read okm:write acl:read acl:create acl:delete lock:read');
    assert.equal(payload.exp, printed.expires_at);
    assert.equal(payload.exp! - payload.iat!, 8 * 3600);
  });

  test('without --customer the token is an operator’s (admin and the customer scopes), at PUBLIC_BASE_URL, the URL alone on stdout', async () => {
    const run = await keyfleet({ PUBLIC_BASE_URL: 'https://keys.example.org' }, '--ttl', '30m');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.split('\n').length, 2);
    assert.ok(run.stdout.startsWith('https://keys.example.org/console/#token='));
    const payload = await payloadOf(run.stdout.trim());
    assert.equal(payload.scope, 'admin okm:read okm:write acl:read acl:create acl:delete lock:read');
    assert.equal(payload.exp! - payload.iat!, 30 * 60);
  });

  test('--scope narrows the token; no PUBLIC_BASE_URL means this host’s PORT', async () => {
    const run = await keyfleet({ PORT: '9123' }, '--customer', 'acme', '--scope', 'okm:read');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.ok(run.stdout.startsWith('http://localhost:9123/console/#token='));
    assert.equal((await payloadOf(run.stdout.trim())).scope, 'okm:read');
  });

  test('a URL that is not http(s), an unknown customer or a malformed ttl exits non-zero naming the problem', async () => {
    const badUrl = await keyfleet({}, '--url', 'ftp://fleet.example.com');
    const unknown = await keyfleet({}, '--customer', 'nobody');
    const badTtl = await keyfleet({}, '--ttl', 'forever');

    assert.equal(badUrl.exitCode, 2);
    assert.match(badUrl.stderr, /--url: expected an http\(s\) URL/);
    assert.notEqual(unknown.exitCode, 0);
    assert.match(unknown.stderr, /unknown customer nobody/);
    assert.equal(badTtl.exitCode, 2);
    assert.match(badTtl.stderr, /--ttl/);
    assert.equal(badUrl.stdout + unknown.stdout + badTtl.stdout, '');
  });
});
