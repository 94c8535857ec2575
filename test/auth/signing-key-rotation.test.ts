import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { listSigningKeys, loadOwnKeySet, retireSigningKey, rotateSigningKey } from '../../src/auth/signing-keys.ts';
import { issueToken } from '../../src/auth/tokens.ts';
import { cliChangeSource } from '../../src/cli/context.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { eventually } from '../helpers/eventually.ts';

forEachDatabase('signing key rotation', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    await createTestCustomer(t, 'acme');
  });
  after(() => t.close());

  const issue = async () => (await issueToken(t.db, t.app.keyRing, t.settings, { customer: 'acme', scopes: ['okm:read'], ttlSeconds: 600 })).token;
  const listOkms = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/okms', headers: { authorization: `Bearer ${token}` } });

  test('after a rotation, a running server accepts tokens of the new key at once and of the previous key during its grace', async () => {
    const before = await issue();

    const rotated = await rotateSigningKey(t.db, t.app.keyRing, 3600, cliChangeSource());
    const afterRotation = await issue();

    assert.equal(decodeProtectedHeader(afterRotation).kid, rotated.kid);
    assert.equal(decodeProtectedHeader(before).kid, rotated.previous);
    assert.equal((await listOkms(afterRotation)).statusCode, 200);
    assert.equal((await listOkms(before)).statusCode, 200);
  });

  test('the JWKS serves the active key and every key still in its grace, and stops serving a retired one', async () => {
    const now = Date.now();
    let clock = now;
    const keySet = await loadOwnKeySet(t.db, () => clock);
    const keys = await listSigningKeys(t.db);
    const active = keys.find((key) => key.retiredAt === null)!;
    const previous = keys.find((key) => key.retiredAt !== null)!;

    const during = (await keySet.jwks()).keys.map((key) => key.kid).sort();
    await retireSigningKey(t.db, previous.kid, cliChangeSource(), now);
    clock = now + 61_000;
    const afterRetirement = (await keySet.jwks()).keys.map((key) => key.kid);

    assert.deepEqual(during, [active.kid, previous.kid].sort());
    assert.deepEqual(afterRetirement, [active.kid]);
  });

  test('a token of a retired key is refused once the server has reread its keys (within a minute)', async () => {
    const token = await issue();
    let clock = Date.now();
    const keySet = await loadOwnKeySet(t.db, () => clock);
    const verify = () => jwtVerify(token, keySet.getKey, { issuer: t.settings.jwtIssuer, audience: t.settings.jwtAudience });
    await verify();

    const rotated = await rotateSigningKey(t.db, t.app.keyRing, 3600, cliChangeSource());
    await retireSigningKey(t.db, rotated.previous!, cliChangeSource());
    clock += 61_000;

    await assert.rejects(verify(), { code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  test('when `keyfleet signing-key retire` has returned, a running server refuses tokens of that key at once', async () => {
    const token = await issue();
    const rotated = await rotateSigningKey(t.db, t.app.keyRing, 3600, cliChangeSource());
    // Earlier tests rotated keys behind the server's back: wait until it knows this token's key.
    await eventually(async () => (await listOkms(token)).statusCode === 200, 10_000, 'the previous key verifying during its grace');

    const run = await runKeyfleet(t.database.env, 'signing-key', 'retire', '--json', '--', rotated.previous!);
    const afterRetirement = await listOkms(token);

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(afterRetirement.statusCode, 401);
  });

  test('the active key cannot be retired', async () => {
    const [active] = (await listSigningKeys(t.db)).filter((key) => key.retiredAt === null);

    await assert.rejects(retireSigningKey(t.db, active!.kid, cliChangeSource()), /is the active key: rotate first/);
  });

  test('keyfleet signing-key rotate, list and retire', async () => {
    const keyfleet = async (group: string, command: string, ...args: string[]) => {
      const run = await runKeyfleet(t.database.env, group, command, '--json', ...args);
      assert.equal(run.exitCode, 0, run.stderr);
      return JSON.parse(run.stdout);
    };

    const rotated = await keyfleet('signing-key', 'rotate', '--grace', '2h');
    const listed: { keys: { kid: string; state: string }[] } = await keyfleet('signing-key', 'list');
    await keyfleet('signing-key', 'retire', '--', rotated.previous_kid);
    const relisted: { keys: { kid: string; state: string }[] } = await keyfleet('signing-key', 'list');

    assert.equal(listed.keys.find((key) => key.kid === rotated.kid)!.state, 'active');
    assert.equal(listed.keys.find((key) => key.kid === rotated.previous_kid)!.state, 'verifying');
    assert.equal(relisted.keys.find((key) => key.kid === rotated.previous_kid)!.state, 'retired');
  });

  test('keyfleet signing-key retire takes a kid that begins with "-", as a base64url kid does one time in 64', async () => {
    const run = await runKeyfleet(t.database.env, 'signing-key', 'retire', '-no-such-kid');

    assert.notEqual(run.exitCode, 0);
    assert.equal(run.stderr, 'keyfleet: signing key -no-such-kid not found\n');
  });

  test('keyfleet signing-key retire takes a kid that begins with "--" after "--", as a base64url kid does one time in 4096, and says so to one given before it', async () => {
    const rotated = await rotateSigningKey(t.db, t.app.keyRing, 3600, cliChangeSource());
    const kid = `--${rotated.previous!.slice(2)}`;
    await t.db.updateTable('signing_keys').set({ kid }).where('kid', '=', rotated.previous!).execute();

    const before = await runKeyfleet(t.database.env, 'signing-key', 'retire', kid, '--json');
    const afterSeparator = await runKeyfleet(t.database.env, 'signing-key', 'retire', '--json', '--', kid);

    assert.equal(before.exitCode, 2);
    assert.deepEqual(JSON.parse(before.stderr), {
      error: { code: 'usage', message: `unknown option '${kid}'`, hint: "A value that begins with '--' goes after '--'. Run 'keyfleet signing-key retire --help' for usage." },
    });
    assert.equal(afterSeparator.exitCode, 0, afterSeparator.stderr);
    assert.deepEqual(JSON.parse(afterSeparator.stdout), { kid, retired: true });
  });

  test('keyfleet signing-key retire takes a kid that begins with "-V", which is not the version flag after a command', async () => {
    const run = await runKeyfleet(t.database.env, 'signing-key', 'retire', '-Vno-such-kid', '--json');

    assert.equal(run.exitCode, 3);
    assert.equal(run.stdout, '');
    assert.deepEqual(JSON.parse(run.stderr), { error: { code: 'not_found', message: 'signing key -Vno-such-kid not found' } });
  });
});
