import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { sessionIdOf } from '../../src/auth/sessions.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { TestApp } from '../helpers/app.ts';
import { forEachDatabase } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import type { ProviderPerson } from '../helpers/openid-provider.ts';
import { appWithSingleSignOn, type SingleSignOnWorld } from '../helpers/single-sign-on.ts';
import { SignInClient } from '../helpers/sign-in-client.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

const PEOPLE: ProviderPerson[] = [
  { sub: 'alice', email: 'alice@example.com', name: 'Alice Admin', groups: ['kf-admins'] },
  { sub: 'bob', email: 'bob@example.com', name: 'Bob Viewer', groups: ['kf-acme-viewers'] },
  { sub: 'carol', email: 'carol@example.com', name: 'Carol Nobody', groups: ['marketing'] },
];

/**
 * The audit entries of changes to people's access made through the API and by signing in and
 * out: people sign in through a real OpenID Provider (as test/auth/single-sign-on.test.ts does).
 */
forEachDatabase('audit entries of role bindings, sessions and API tokens', (kind) => {
  let world: SingleSignOnWorld;
  let t: TestApp;
  let base: string;
  let admin: string;
  let adminJti: string;
  /** Every cookie secret and token the tests handled: none may reach an entry. */
  const secrets: string[] = [];

  before(async () => {
    world = await appWithSingleSignOn(kind, PEOPLE);
    ({ t, base } = world);
    await createTestCustomer(t, 'acme');
    admin = await issueTestToken(t, { scopes: ['admin'], subject: 'audit-admin' });
    secrets.push(admin);
    adminJti = jtiOf(admin);
    for (const binding of [
      { kind: 'group', value: 'kf-admins', role: 'admin' },
      { kind: 'group', value: 'kf-acme-viewers', role: 'viewer', customer: 'acme' },
    ]) {
      const response = await api('POST', '/api/v1/role-bindings', { token: admin, body: binding });
      assert.equal(response.status, 201, await response.text());
    }
  });
  after(() => world?.close());

  const jtiOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti;

  async function api(method: string, path: string, { token, client, csrf, body }: { token?: string; client?: SignInClient; csrf?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = { 'user-agent': 'people-audit-test/1.0' };
    if (token) headers.authorization = `Bearer ${token}`;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (client) return client.request(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  }

  /** Signs in; the session's cookie secret, its handle as the session list shows it, and the person as /api/v1/me names them. */
  async function signedIn(login: string) {
    const client = new SignInClient();
    const { response, url } = await client.signIn(base, login);
    assert.equal(response.status, 200, `${login}: ${url} ${response.status}`);
    const secret = client.cookie(base, 'keyfleet_session')!;
    secrets.push(secret, sessionIdOf(secret));
    const me = await api('GET', '/api/v1/me', { client });
    assert.equal(me.status, 200);
    const csrf = me.headers.get('x-csrf-token')!;
    secrets.push(csrf);
    return { client, secret, handle: sessionIdOf(secret).slice(0, 16), actor: (await me.json()).data.actor as { kind: string; id: string; name: string }, csrf };
  }

  const assertFromRequest = (entry: AuditEntry) => {
    assert.equal(entry.ip, '127.0.0.1');
    assert.match(entry.request_id!, /.+/);
  };

  test('a sign-in appends session.started: the person is its actor, the session named by its listed handle, with the person and role; a refused sign-in appends nothing', async () => {
    const start = await lastAuditId(t.db);

    const alice = await signedIn('alice');
    const bob = await signedIn('bob');
    const refused = await new SignInClient().signIn(base, 'carol');

    assert.equal(refused.response.status, 403);
    const entries = await auditEntriesAfter(t.db, start);
    assert.deepEqual(entries.map((entry) => entry.action), ['session.started', 'session.started']);
    const [aliceEntry, bobEntry] = entries;
    assert.deepEqual(aliceEntry!.actor, { kind: 'person', id: alice.actor.id, name: 'Alice Admin' });
    assert.deepEqual(alice.actor, aliceEntry!.actor);
    assert.deepEqual(aliceEntry!.entity, { type: 'session', id: alice.handle });
    assert.equal(aliceEntry!.customer, null);
    assert.equal(aliceEntry!.before, null);
    assert.deepEqual(aliceEntry!.after, { person: { id: Number(alice.actor.id), email: 'alice@example.com', name: 'Alice Admin' }, role: 'admin' });
    assertFromRequest(aliceEntry!);
    assert.deepEqual(bobEntry!.actor, { kind: 'person', id: bob.actor.id, name: 'Bob Viewer' });
    assert.equal(bobEntry!.customer, 'acme');
    assert.deepEqual(bobEntry!.after, { person: { id: Number(bob.actor.id), email: 'bob@example.com', name: 'Bob Viewer' }, role: 'viewer' });
    const listed = (await (await api('GET', `/api/v1/sessions?person=${alice.actor.id}`, { token: admin })).json()).data as { id: string }[];
    assert.ok(listed.some((session) => session.id === aliceEntry!.entity.id), 'the entry names the session as the list does');
  });

  test('role bindings made and removed by a signed-in admin are recorded with the person as actor, and by a token with the token', async () => {
    const alice = await signedIn('alice');
    const start = await lastAuditId(t.db);

    const byPerson = await api('POST', '/api/v1/role-bindings', { client: alice.client, csrf: alice.csrf, body: { kind: 'email', value: 'Dave@Example.com', role: 'acl-manager', customer: 'acme' } });
    const byToken = await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'subject', value: 'erin', role: 'auditor' } });
    const personBinding = (await byPerson.json()).data as { id: string; created_at: string; created_by: string };
    const tokenBinding = (await byToken.json()).data as { id: string; created_at: string; created_by: string };
    const removedByPerson = await api('DELETE', `/api/v1/role-bindings/${tokenBinding.id}`, { client: alice.client, csrf: alice.csrf });
    const removedByToken = await api('DELETE', `/api/v1/role-bindings/${personBinding.id}`, { token: admin });

    assert.deepEqual([byPerson.status, byToken.status, removedByPerson.status, removedByToken.status], [201, 201, 204, 204]);
    const [created1, created2, deleted1, deleted2, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.deepEqual([created1!.action, created2!.action, deleted1!.action, deleted2!.action], ['role_binding.created', 'role_binding.created', 'role_binding.deleted', 'role_binding.deleted']);
    const tokenActor = { kind: 'token', id: adminJti, name: 'audit-admin' };
    assert.deepEqual([created1!.actor, created2!.actor, deleted1!.actor, deleted2!.actor], [alice.actor, tokenActor, alice.actor, tokenActor]);
    assert.deepEqual(created1!.entity, { type: 'role_binding', id: personBinding.id });
    assert.equal(created1!.customer, 'acme');
    assert.equal(created1!.before, null);
    assert.deepEqual(created1!.after, { kind: 'email', value: 'dave@example.com', role: 'acl-manager' });
    assert.equal(created1!.user_agent, 'people-audit-test/1.0');
    assert.deepEqual(created2!.entity, { type: 'role_binding', id: tokenBinding.id });
    assert.equal(created2!.customer, null);
    assert.deepEqual(created2!.after, { kind: 'subject', value: 'erin', role: 'auditor' });
    assert.deepEqual(deleted1!.entity, { type: 'role_binding', id: tokenBinding.id });
    assert.deepEqual(deleted1!.before, { kind: 'subject', value: 'erin', role: 'auditor', customer: null, created_at: tokenBinding.created_at, created_by: tokenBinding.created_by });
    assert.equal(deleted1!.after, null);
    assert.deepEqual(deleted2!.before, { kind: 'email', value: 'dave@example.com', role: 'acl-manager', customer: 'acme', created_at: personBinding.created_at, created_by: `person:${alice.actor.id}` });
    assert.equal(deleted2!.customer, 'acme');
    for (const entry of [created1!, created2!, deleted1!, deleted2!]) assertFromRequest(entry);
  });

  test('refused role-binding changes append nothing: a bad role, an unknown customer, an unknown id, a write without the anti-CSRF token, a viewer', async () => {
    const alice = await signedIn('alice');
    const bob = await signedIn('bob');
    const start = await lastAuditId(t.db);

    const answers = [
      await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'group', value: 'x', role: 'superuser' } }),
      await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'group', value: 'x', role: 'viewer', customer: 'nobody' } }),
      await api('DELETE', '/api/v1/role-bindings/00000000-0000-0000-0000-000000000000', { token: admin }),
      await api('POST', '/api/v1/role-bindings', { client: alice.client, body: { kind: 'group', value: 'x', role: 'viewer' } }),
      await api('POST', '/api/v1/role-bindings', { client: bob.client, csrf: bob.csrf, body: { kind: 'group', value: 'x', role: 'viewer' } }),
    ];

    assert.deepEqual(answers.map((answer) => answer.status), [400, 400, 404, 403, 403]);
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
  });

  test('a role binding whose entry fails to be written is not made either', async () => {
    const start = await lastAuditId(t.db);
    await withFailureAfterEachAuditEntry(t.db, kind, async () => {
      const failed = await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'group', value: 'never-bound', role: 'viewer' } });
      assert.equal(failed.status, 500);
    });

    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    const bindings = (await (await api('GET', '/api/v1/role-bindings', { token: admin })).json()).data as { value: string }[];
    assert.ok(!bindings.some((binding) => binding.value === 'never-bound'));
  });

  test('sign-out appends session.ended with the person as actor; signing out again, or without a session, appends nothing', async () => {
    const alice = await signedIn('alice');
    const start = await lastAuditId(t.db);

    const out = await api('POST', '/auth/logout', { client: alice.client, csrf: alice.csrf });
    const replayed = await fetch(`${base}/auth/logout`, { method: 'POST', headers: { cookie: `keyfleet_session=${alice.secret}`, 'x-csrf-token': alice.csrf } });
    const anonymous = await fetch(`${base}/auth/logout`, { method: 'POST' });

    assert.deepEqual([out.status, replayed.status, anonymous.status], [200, 200, 200]);
    assert.equal((await replayed.json()).message, 'No session to sign out of');
    const [ended, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(ended!.action, 'session.ended');
    assert.deepEqual(ended!.actor, alice.actor);
    assert.deepEqual(ended!.entity, { type: 'session', id: alice.handle });
    assert.equal(ended!.customer, null);
    assert.deepEqual((ended!.before as { person: unknown }).person, { id: Number(alice.actor.id), email: 'alice@example.com', name: 'Alice Admin' });
    assert.equal(ended!.after, null);
    assertFromRequest(ended!);
  });

  test('a sign-out without its anti-CSRF token ends nothing and appends nothing', async () => {
    const alice = await signedIn('alice');
    const start = await lastAuditId(t.db);

    const out = await api('POST', '/auth/logout', { client: alice.client });

    assert.equal(out.status, 200);
    assert.equal((await out.json()).message, 'No session to sign out of');
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    // The answer clears the browser's cookie; the session itself lasts.
    assert.equal((await fetch(`${base}/api/v1/me`, { headers: { cookie: `keyfleet_session=${alice.secret}` } })).status, 200);
  });

  test('an admin revoking one session appends session.revoked; revoking it again (404) appends nothing', async () => {
    const bob = await signedIn('bob');
    const alice = await signedIn('alice');
    const start = await lastAuditId(t.db);

    const revoked = await api('DELETE', `/api/v1/sessions/${bob.handle}`, { client: alice.client, csrf: alice.csrf });
    const again = await api('DELETE', `/api/v1/sessions/${bob.handle}`, { token: admin });
    const unknown = await api('DELETE', '/api/v1/sessions/0123456789abcdef', { token: admin });

    assert.equal(revoked.status, 200);
    assert.deepEqual((await revoked.json()).data, { revoked: 1 });
    assert.deepEqual([again.status, unknown.status], [404, 404]);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(entry!.action, 'session.revoked');
    assert.deepEqual(entry!.actor, alice.actor);
    assert.deepEqual(entry!.entity, { type: 'session', id: bob.handle });
    assert.equal(entry!.customer, 'acme');
    assert.deepEqual((entry!.before as { person: unknown }).person, { id: Number(bob.actor.id), email: 'bob@example.com', name: 'Bob Viewer' });
    assertFromRequest(entry!);
  });

  test('offboarding a person appends one session.revoked per session ended, in one transaction; a person with none left, or unknown, appends nothing', async () => {
    const sessions = [await signedIn('bob'), await signedIn('bob'), await signedIn('bob')];
    const personId = sessions[0]!.actor.id;
    const lasting = ((await (await api('GET', `/api/v1/sessions?person=${personId}`, { token: admin })).json()).data as { id: string }[]).map((session) => session.id);
    const start = await lastAuditId(t.db);

    const offboarded = await api('DELETE', `/api/v1/people/${personId}/sessions`, { token: admin });
    const again = await api('DELETE', `/api/v1/people/${personId}/sessions`, { token: admin });
    const unknown = await api('DELETE', '/api/v1/people/999999/sessions', { token: admin });

    assert.equal(offboarded.status, 200);
    assert.deepEqual((await offboarded.json()).data, { revoked: lasting.length });
    assert.deepEqual((await again.json()).data, { revoked: 0 });
    assert.equal(unknown.status, 404);
    const entries = await auditEntriesAfter(t.db, start);
    assert.ok(lasting.length >= 3);
    assert.equal(entries.length, lasting.length);
    assert.ok(entries.every((entry) => entry.action === 'session.revoked' && entry.actor.kind === 'token' && entry.customer === 'acme'));
    assert.deepEqual(entries.map((entry) => entry.entity.id).sort(), [...lasting].sort());
    for (const session of sessions) assert.ok(lasting.includes(session.handle));
    assert.equal(new Set(entries.map((entry) => entry.time)).size, 1, 'one transaction: one time');
    assert.equal(new Set(entries.map((entry) => entry.request_id)).size, 1);
  });

  test('revoking an API token appends token.revoked with the token named, never the token; revoking it again or an unknown id appends nothing', async () => {
    const reader = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'], subject: 'store-dashboards' });
    secrets.push(reader);
    const id = jtiOf(reader);
    const start = await lastAuditId(t.db);

    const revoked = await api('DELETE', `/api/v1/tokens/${id}`, { token: admin });
    const again = await api('DELETE', `/api/v1/tokens/${id}`, { token: admin });
    const unknown = await api('DELETE', '/api/v1/tokens/00000000-0000-0000-0000-000000000000', { token: admin });

    assert.deepEqual([revoked.status, again.status, unknown.status], [200, 200, 404]);
    const revokedAt = (await revoked.json()).data.revoked_at as string;
    assert.equal((await again.json()).data.revoked_at, revokedAt);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(entry!.action, 'token.revoked');
    assert.deepEqual(entry!.actor, { kind: 'token', id: adminJti, name: 'audit-admin' });
    assert.deepEqual(entry!.entity, { type: 'token', id });
    assert.equal(entry!.customer, 'acme');
    assert.deepEqual(entry!.before, { name: 'store-dashboards', subject: 'store-dashboards', customer: 'acme', revoked_at: null });
    assert.deepEqual(entry!.after, { name: 'store-dashboards', subject: 'store-dashboards', customer: 'acme', revoked_at: revokedAt });
    assertFromRequest(entry!);
  });

  test('no cookie, session id, anti-CSRF token or API token is in any stored entry, and the chain is intact', async () => {
    await chainAllPendingEntries(t.db);
    const rows = await t.db.selectFrom('audit_entries').selectAll().execute();
    assert.ok(rows.length > 10);
    const stored = rows.map((row) => JSON.stringify(row)).join('\n');
    assert.ok(secrets.length > 10);
    for (const secret of secrets) assert.ok(!stored.includes(secret), 'a secret reached an entry');
    await assertAuditChainIntact(t.db);
  });
});
