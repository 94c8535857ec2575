import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startSession, upsertPerson } from '../../src/auth/sessions.ts';
import { buildServer } from '../../src/server.ts';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { eventually } from '../helpers/eventually.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

/**
 * keyfleet token list|revoke, role bind|unbind|list and session list|revoke, against an app
 * and a second app on the same database: each has its own copies of what is revoked, as two
 * server processes do.
 */
forEachDatabase('keyfleet token, role and session commands', (kind) => {
  let t: TestApp;
  let other: FastifyInstance;
  before(async () => {
    t = await buildTestApp(kind);
    other = await buildServer({ settings: t.settings, db: t.db, dialect: t.dialect, keyRing: t.app.keyRing });
    await other.ready();
    await createTestCustomer(t, 'acme');
  });
  after(async () => {
    await other?.close();
    await t?.close();
  });

  const keyfleet = (...args: string[]) => runKeyfleet(t.database.env, ...args);
  const json = <T>(run: { exitCode: number | null; stdout: string; stderr: string }): T => {
    assert.equal(run.exitCode, 0, run.stderr);
    return JSON.parse(run.stdout) as T;
  };
  const readOkms = (app: FastifyInstance, token: string) => app.inject({ method: 'GET', url: '/api/v1/okms', headers: { authorization: `Bearer ${token}` } });

  test('token issue names the token and prints its id; token list shows it; token revoke makes every process refuse it within a second', async () => {
    const issued = json<{ token: string; id: string }>(await keyfleet('token', 'issue', '--customer', 'acme', '--scope', 'okm:read', '--name', 'store dashboards', '--ttl', '1d', '--json'));
    assert.equal((await readOkms(t.app, issued.token)).statusCode, 200);
    assert.equal((await readOkms(other, issued.token)).statusCode, 200);
    const listed = json<{ tokens: { id: string; name: string; customer: string; scopes: string[]; revoked_at: null }[] }>(await keyfleet('token', 'list', '--customer', 'acme', '--json'));
    assert.deepEqual(
      listed.tokens.filter((token) => token.id === issued.id).map(({ name, customer, scopes, revoked_at }) => ({ name, customer, scopes, revoked_at })),
      [{ name: 'store dashboards', customer: 'acme', scopes: ['okm:read'], revoked_at: null }],
    );

    const revoked = json<{ token: { id: string; revoked_at: string } }>(await keyfleet('token', 'revoke', issued.id, '--json'));
    const revokedAt = Date.now();

    assert.equal(revoked.token.id, issued.id);
    assert.ok(revoked.token.revoked_at);
    for (const app of [t.app, other]) {
      await eventually(async () => (await readOkms(app, issued.token)).statusCode === 401, 3_000, 'the token refused');
      assert.equal((await readOkms(app, issued.token)).json().error_msg, 'Token has been revoked');
    }
    assert.ok(Date.now() - revokedAt <= 1_500, `took ${Date.now() - revokedAt} ms`);
    const again = json<{ token: { revoked_at: string } }>(await keyfleet('token', 'revoke', issued.id, '--json'));
    assert.equal(again.token.revoked_at, revoked.token.revoked_at, 'a second revocation keeps the first time');
  });

  test('token revoke --token-file revokes a token signed before the registry (no row, no id on the list) by the token itself; a token not of this deployment is refused', async () => {
    const legacy = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });
    const { jti } = JSON.parse(Buffer.from(legacy.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string };
    await t.db.deleteFrom('api_tokens').where('id', '=', jti).execute();
    const file = path.join(t.database.dataDir, 'legacy.jwt');
    fs.writeFileSync(file, `${legacy}\n`);
    assert.equal((await readOkms(t.app, legacy)).statusCode, 200);
    const unknownId = await keyfleet('token', 'revoke', jti);
    assert.notEqual(unknownId.exitCode, 0, 'no row: not revocable by its id');

    const revoked = json<{ token: { id: string; name: string; revoked_at: string } }>(await keyfleet('token', 'revoke', '--token-file', file, '--json'));

    assert.equal(revoked.token.id, jti);
    assert.match(revoked.token.name, /unregistered/);
    for (const app of [t.app, other]) await eventually(async () => (await readOkms(app, legacy)).statusCode === 401, 3_000, 'the legacy token refused');
    fs.writeFileSync(file, `${legacy.slice(0, -4)}AAAA\n`);
    const forged = await keyfleet('token', 'revoke', '--token-file', file);
    assert.equal(forged.exitCode, 2);
    assert.match(forged.stderr, /not a live token of this deployment/);
    assert.equal((await keyfleet('token', 'revoke', jti, '--token-file', file)).exitCode, 2);
  });

  test('the token API lists and revokes tokens, for an admin; an unknown id is a 404, and a lifetime past 366 days is refused', async () => {
    const admin = await issueTestToken(t, { scopes: ['admin'] });
    const reader = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });
    const id = (await t.app.inject({ method: 'GET', url: '/api/v1/tokens', headers: { authorization: `Bearer ${admin}` } })).json().data.find((token: { scopes: string[] }) => token.scopes.join() === 'okm:read').id;

    const revoked = await t.app.inject({ method: 'DELETE', url: `/api/v1/tokens/${id}`, headers: { authorization: `Bearer ${admin}` } });
    const unknown = await t.app.inject({ method: 'DELETE', url: '/api/v1/tokens/00000000-0000-0000-0000-000000000000', headers: { authorization: `Bearer ${admin}` } });
    const tooLong = await keyfleet('token', 'issue', '--scope', 'admin', '--ttl', '400d');

    assert.equal(revoked.statusCode, 200);
    assert.equal(unknown.statusCode, 404);
    await eventually(async () => (await readOkms(t.app, reader)).statusCode === 401, 3_000, 'the revoked token refused');
    assert.notEqual(tooLong.exitCode, 0);
    assert.match(tooLong.stderr, /ttl: at most 366 days/);
  });

  test('role bind, list and unbind; a wrong role, customer or kind is refused with one line and binds nothing', async () => {
    const bound = json<{ binding: { id: string; kind: string; value: string; role: string; customer: string } }>(await keyfleet('role', 'bind', 'acl-manager', '--group', 'store-security', '--customer', 'acme', '--json'));
    assert.deepEqual({ ...bound.binding, id: undefined, created_at: undefined, created_by: undefined }, { id: undefined, kind: 'group', value: 'store-security', role: 'acl-manager', customer: 'acme', created_at: undefined, created_by: undefined });
    const listed = json<{ bindings: { id: string }[]; roles: Record<string, string[]> }>(await keyfleet('role', 'list', '--json'));
    assert.ok(listed.bindings.some((binding) => binding.id === bound.binding.id));
    assert.deepEqual(listed.roles['release-manager'], ['okm:read', 'acl:read', 'lock:read', 'firmware:write', 'rollout:write', 'rollout:approve']);

    const unknownRole = await keyfleet('role', 'bind', 'root', '--group', 'x');
    const unknownCustomer = await keyfleet('role', 'bind', 'viewer', '--email', 'a@example.com', '--customer', 'nobody');
    const twoKinds = await keyfleet('role', 'bind', 'viewer', '--email', 'a@example.com', '--group', 'x');
    const unbound = json<{ removed: { id: string } }>(await keyfleet('role', 'unbind', bound.binding.id, '--json'));
    const unbindAgain = await keyfleet('role', 'unbind', bound.binding.id);

    assert.match(unknownRole.stderr, /unknown role "root"/);
    assert.notEqual(unknownRole.exitCode, 0);
    assert.match(unknownCustomer.stderr, /unknown customer nobody/);
    assert.equal(twoKinds.exitCode, 2);
    assert.equal(unbound.removed.id, bound.binding.id);
    assert.notEqual(unbindAgain.exitCode, 0);
    assert.match(unbindAgain.stderr, /not found/);
    assert.equal(json<{ bindings: unknown[] }>(await keyfleet('role', 'list', '--json')).bindings.length, listed.bindings.length - 1);
  });

  test('session list shows a person\'s sessions; session revoke --person ends them all, and their cookies are refused within a second', async () => {
    await t.db.insertInto('role_bindings').values({ id: 'cli-test-binding', kind: 'email', value: 'erin@example.com', role: 'viewer', customer_id: null, created_at: Date.now(), created_by: 'test' }).execute();
    const identity = { issuer: 'https://idp.example.com', subject: 'erin', email: 'erin@example.com', name: 'Erin', groups: [], refreshToken: undefined };
    const person = await upsertPerson(t.db, identity, Date.now());
    const sessions = [await startSession(t.db, t.app.keyRing, t.settings, person, identity, Date.now()), await startSession(t.db, t.app.keyRing, t.settings, person, identity, Date.now())];
    const me = (app: FastifyInstance, secret: string) => app.inject({ method: 'GET', url: '/api/v1/me', cookies: { keyfleet_session: secret } });
    for (const session of sessions) assert.equal((await me(other, session.secret)).statusCode, 200);

    const listed = json<{ sessions: { id: string; person: { id: number } }[] }>(await keyfleet('session', 'list', '--person', String(person.id), '--json'));
    const revoked = json<{ revoked: number }>(await keyfleet('session', 'revoke', '--person', String(person.id), '--json'));
    const revokedAt = Date.now();

    assert.equal(listed.sessions.length, 2);
    assert.equal(revoked.revoked, 2);
    for (const session of sessions) await eventually(async () => (await me(other, session.secret)).statusCode === 401, 3_000, 'the session refused');
    assert.ok(Date.now() - revokedAt <= 1_500, `took ${Date.now() - revokedAt} ms`);
    assert.equal((await keyfleet('session', 'revoke', '0123456789abcdef')).exitCode, 3);
    assert.equal((await keyfleet('session', 'revoke')).exitCode, 2);
    assert.equal((await keyfleet('session', 'list', '--person', 'x')).exitCode, 2);
  });
});
