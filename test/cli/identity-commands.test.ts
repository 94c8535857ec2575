import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { loadPublicJwks } from '../../src/auth/signing-keys.ts';
import type { Settings } from '../../src/config/settings.ts';
import type { Db } from '../../src/db/database.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import type { TestDatabase } from '../helpers/databases.ts';


forEachDatabase('keyfleet customer create and token issue', (kind) => {
  let store: TestStore;
  let database: TestDatabase;
  let settings: Settings;
  let db: Db;
  before(async () => {
    store = await openTestStore(kind);
    ({ database, settings, db } = store);
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(database.env, ...args);

  test('customer create --json prints the new customer as one JSON object', async () => {
    const run = await keyfleet('customer', 'create', 'acme', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    const printed = JSON.parse(run.stdout) as { id: number; name: string };
    assert.deepEqual(Object.keys(printed).sort(), ['id', 'name']);
    assert.equal(printed.name, 'acme');
    assert.ok(Number.isInteger(printed.id));
    assert.equal(run.stdout.trim().split('\n').length, 1);
  });

  test('customer create without --json prints the id and the name', async () => {
    const run = await keyfleet('customer', 'create', 'globex');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.match(run.stdout, /^id: \d+\nname: globex\n$/);
  });

  test('customer create with a taken name exits 4 with one line on stderr, one JSON object with --json', async () => {
    const text = await keyfleet('customer', 'create', 'acme');
    const json = await keyfleet('customer', 'create', 'acme', '--json');

    assert.equal(text.exitCode, 4);
    assert.equal(text.stdout, '');
    assert.equal(text.stderr, 'keyfleet: customer acme already exists\n');
    assert.equal(json.exitCode, 4);
    assert.equal(json.stdout, '');
    assert.deepEqual(JSON.parse(json.stderr), { error: { code: 'conflict', message: 'customer acme already exists' } });
  });

  test('customer create takes a name that begins with "-"', async () => {
    const run = await keyfleet('customer', 'create', '-dash-first', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { name: string }).name, '-dash-first');
  });

  test('customer create with a misspelt option exits non-zero and creates nothing', async () => {
    const run = await keyfleet('customer', 'create', 'initech', '--jsn');

    assert.notEqual(run.exitCode, 0);
    assert.equal(run.stdout, '');
    assert.equal(await db.selectFrom('customers').select('id').where('name', '=', 'initech').executeTakeFirst(), undefined);
  });

  test('customer create with a misspelt option and no name exits non-zero and does not take the option as the name', async () => {
    const run = await keyfleet('customer', 'create', '--jsn');

    assert.notEqual(run.exitCode, 0);
    assert.match(run.stderr, /unknown option '--jsn'/);
    assert.equal(await db.selectFrom('customers').select('id').where('name', '=', '--jsn').executeTakeFirst(), undefined);
  });

  test('customer create takes a name that begins with "--" after the "--" separator', async () => {
    const run = await keyfleet('customer', 'create', '--json', '--', '--double-dash');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { name: string }).name, '--double-dash');
  });

  test('token issue --json prints a token that verifies against the deployment JWKS', async () => {
    const run = await keyfleet('token', 'issue', '--customer', 'acme', '--scope', 'acl:read acl:create', '--ttl', '15m', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    const { token, expires_at } = JSON.parse(run.stdout) as { token: string; expires_at: number };
    const { payload } = await jwtVerify(token, createLocalJWKSet(await loadPublicJwks(db)), {
      issuer: settings.jwtIssuer,
      audience: settings.jwtAudience,
      algorithms: ['EdDSA'],
    });
    assert.equal(payload.customer, 'acme');
    assert.equal(payload.scope, 'acl:read acl:create');
    assert.equal(payload.exp, expires_at);
    assert.equal(payload.exp! - payload.iat!, 15 * 60);
  });

  test('token issue without --customer and without the admin scope exits non-zero with one line on stderr', async () => {
    const run = await keyfleet('token', 'issue', '--scope', 'okm:read');

    assert.notEqual(run.exitCode, 0);
    assert.equal(run.stderr, 'keyfleet: scope: a token for no particular customer must have the admin scope\n');
  });

  test('token issue --customer with the admin scope is a usage error (exit 2): an admin token acts for every customer', async () => {
    await keyfleet('customer', 'create', 'initech');

    const run = await keyfleet('token', 'issue', '--customer', 'initech', '--scope', 'okm:read admin');
    const json = await keyfleet('token', 'issue', '--customer', 'initech', '--scope', 'admin', '--json');

    assert.equal(run.exitCode, 2);
    assert.equal(run.stdout, '');
    assert.equal(run.stderr, 'keyfleet: scope: admin is not for a customer token: an admin token acts for every customer; issue it without --customer\n');
    assert.equal(json.exitCode, 2);
    assert.equal(JSON.parse(json.stderr).error.code, 'usage');
  });

  test('token issue for an unknown customer exits non-zero with one line on stderr', async () => {
    const run = await keyfleet('token', 'issue', '--customer', 'nobody', '--scope', 'acl:read');

    assert.notEqual(run.exitCode, 0);
    assert.equal(run.stderr, 'keyfleet: customer: unknown customer nobody\n');
  });

  test('token issue with an unknown scope or a malformed ttl exits non-zero naming the problem', async () => {
    const unknownScope = await keyfleet('token', 'issue', '--scope', 'admin acl:write');
    const badTtl = await keyfleet('token', 'issue', '--scope', 'admin', '--ttl', '1w');

    assert.notEqual(unknownScope.exitCode, 0);
    assert.match(unknownScope.stderr, /^keyfleet: scope: unknown scope acl:write \(known: .*\)\n$/);
    assert.notEqual(badTtl.exitCode, 0);
    assert.match(badTtl.stderr, /^keyfleet: --ttl: expected a positive duration such as 30s, 15m, 1h or 7d, got "1w"\n$/);
  });
});
