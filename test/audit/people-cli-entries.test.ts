import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { sessionHandle, sessionIdOf, startSession, upsertPerson } from '../../src/auth/sessions.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

/** The audit entries of keyfleet token issue|revoke, role bind|unbind and session revoke: the command line's actor, no request. */
forEachDatabase('audit entries of the token, role and session commands', (kind) => {
  let t: TestApp;
  const username = os.userInfo().username;
  const cliActor = { kind: 'cli', id: username, name: username };
  /** Every token and cookie secret the tests handled: none may reach an entry. */
  const secrets: string[] = [];

  before(async () => {
    t = await buildTestApp(kind);
    await createTestCustomer(t, 'acme');
  });
  after(() => t?.close());

  const keyfleet = (...args: string[]) => runKeyfleet(t.database.env, ...args);
  const json = <T>(run: { exitCode: number | null; stdout: string; stderr: string }): T => {
    assert.equal(run.exitCode, 0, run.stderr);
    return JSON.parse(run.stdout) as T;
  };
  const jtiOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string }).jti;
  const withoutRequest = { request_id: null, ip: null, user_agent: null };

  test('token issue appends token.issued (never the token); token revoke appends token.revoked once, a second revocation nothing', async () => {
    const start = await lastAuditId(t.db);

    const issued = json<{ token: string; id: string; expires_at: number }>(await keyfleet('token', 'issue', '--customer', 'acme', '--scope', 'okm:read acl:read', '--name', 'store dashboards', '--ttl', '1d', '--json'));
    secrets.push(issued.token);
    const revoked = json<{ token: { revoked_at: string } }>(await keyfleet('token', 'revoke', issued.id, '--json'));
    json(await keyfleet('token', 'revoke', issued.id, '--json'));

    const [issue, revoke, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(issue!.action, 'token.issued');
    assert.deepEqual(issue!.actor, cliActor);
    assert.deepEqual(issue!.entity, { type: 'token', id: issued.id });
    assert.equal(issue!.customer, 'acme');
    assert.equal(issue!.before, null);
    assert.deepEqual(issue!.after, { name: 'store dashboards', subject: 'customer:acme', customer: 'acme', scopes: ['okm:read', 'acl:read'], expires_at: new Date(issued.expires_at * 1000).toISOString() });
    assert.deepEqual({ request_id: issue!.request_id, ip: issue!.ip, user_agent: issue!.user_agent }, withoutRequest);
    assert.equal(revoke!.action, 'token.revoked');
    assert.deepEqual(revoke!.actor, cliActor);
    assert.deepEqual(revoke!.entity, { type: 'token', id: issued.id });
    assert.equal(revoke!.customer, 'acme');
    assert.deepEqual(revoke!.before, { name: 'store dashboards', subject: 'customer:acme', customer: 'acme', revoked_at: null });
    assert.deepEqual(revoke!.after, { name: 'store dashboards', subject: 'customer:acme', customer: 'acme', revoked_at: revoked.token.revoked_at });
  });

  test('an operator token (keyfleet token issue without --customer) is recorded for no customer; a refused issue appends nothing', async () => {
    const start = await lastAuditId(t.db);

    const issued = json<{ token: string; id: string }>(await keyfleet('token', 'issue', '--scope', 'admin', '--subject', 'ops-oncall', '--json'));
    secrets.push(issued.token);
    const tooLong = await keyfleet('token', 'issue', '--scope', 'admin', '--ttl', '400d');
    const unknownCustomer = await keyfleet('token', 'issue', '--customer', 'nobody', '--scope', 'okm:read');

    assert.notEqual(tooLong.exitCode, 0);
    assert.notEqual(unknownCustomer.exitCode, 0);
    const [issue, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(issue!.customer, null);
    assert.deepEqual(issue!.after, { name: 'ops-oncall', subject: 'ops-oncall', customer: null, scopes: ['admin'], expires_at: (issue!.after as { expires_at: string }).expires_at });
  });

  test('token revoke --token-file of a token signed before the registry appends one token.revoked; a forged token and an unknown id append nothing', async () => {
    const legacy = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });
    secrets.push(legacy);
    const jti = jtiOf(legacy);
    await t.db.deleteFrom('api_tokens').where('id', '=', jti).execute();
    const file = path.join(t.database.dataDir, 'legacy-audit.jwt');
    fs.writeFileSync(file, `${legacy}\n`);
    const start = await lastAuditId(t.db);

    const unknownId = await keyfleet('token', 'revoke', jti);
    const revoked = json<{ token: { id: string; name: string; revoked_at: string } }>(await keyfleet('token', 'revoke', '--token-file', file, '--json'));
    fs.writeFileSync(file, `${legacy.slice(0, -4)}AAAA\n`);
    const forged = await keyfleet('token', 'revoke', '--token-file', file);

    assert.notEqual(unknownId.exitCode, 0);
    assert.equal(forged.exitCode, 2);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(entry!.action, 'token.revoked');
    assert.deepEqual(entry!.actor, cliActor);
    assert.deepEqual(entry!.entity, { type: 'token', id: jti });
    assert.equal(entry!.customer, 'acme');
    assert.deepEqual(entry!.after, { name: revoked.token.name, subject: 'customer:acme', customer: 'acme', revoked_at: revoked.token.revoked_at });
  });

  test('role bind and unbind append role_binding.created and role_binding.deleted; refused ones append nothing', async () => {
    const start = await lastAuditId(t.db);

    const bound = json<{ binding: { id: string; created_at: string } }>(await keyfleet('role', 'bind', 'acl-manager', '--group', 'store-security', '--customer', 'acme', '--json'));
    const unknownRole = await keyfleet('role', 'bind', 'root', '--group', 'x');
    const unknownCustomer = await keyfleet('role', 'bind', 'viewer', '--email', 'a@example.com', '--customer', 'nobody');
    json(await keyfleet('role', 'unbind', bound.binding.id, '--json'));
    const unbindAgain = await keyfleet('role', 'unbind', bound.binding.id);

    assert.notEqual(unknownRole.exitCode, 0);
    assert.notEqual(unknownCustomer.exitCode, 0);
    assert.notEqual(unbindAgain.exitCode, 0);
    const [created, deleted, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.deepEqual([created!.action, deleted!.action], ['role_binding.created', 'role_binding.deleted']);
    for (const entry of [created!, deleted!]) {
      assert.deepEqual(entry.actor, cliActor);
      assert.deepEqual(entry.entity, { type: 'role_binding', id: bound.binding.id });
      assert.equal(entry.customer, 'acme');
      assert.deepEqual({ request_id: entry.request_id, ip: entry.ip, user_agent: entry.user_agent }, withoutRequest);
    }
    assert.deepEqual(created!.after, { kind: 'group', value: 'store-security', role: 'acl-manager' });
    assert.deepEqual(deleted!.before, { kind: 'group', value: 'store-security', role: 'acl-manager', customer: 'acme', created_at: bound.binding.created_at, created_by: `cli:${username}` });
  });

  test('session revoke appends session.revoked, one per session for --person; nothing to revoke appends nothing', async () => {
    await t.db.insertInto('role_bindings').values({ id: 'audit-cli-binding', kind: 'email', value: 'erin@example.com', role: 'viewer', customer_id: null, created_at: Date.now(), created_by: 'test' }).execute();
    const identity = { issuer: 'https://idp.example.com', subject: 'erin', email: 'erin@example.com', name: 'Erin', groups: [], refreshToken: undefined };
    const person = await upsertPerson(t.db, identity, Date.now());
    const sessions = await Promise.all([1, 2, 3].map(() => startSession(t.db, t.app.keyRing, t.settings, person, identity, Date.now())));
    secrets.push(...sessions.flatMap((session) => [session.secret, sessionIdOf(session.secret)]));
    const handles = sessions.map((session) => sessionHandle(sessionIdOf(session.secret)));
    const start = await lastAuditId(t.db);

    json(await keyfleet('session', 'revoke', handles[0]!, '--json'));
    const again = await keyfleet('session', 'revoke', handles[0]!);
    const offboarded = json<{ revoked: number }>(await keyfleet('session', 'revoke', '--person', String(person.id), '--json'));
    const none = json<{ revoked: number }>(await keyfleet('session', 'revoke', '--person', String(person.id), '--json'));
    const unknownPerson = await keyfleet('session', 'revoke', '--person', '999999');

    assert.equal(again.exitCode, 3);
    assert.equal(offboarded.revoked, 2);
    assert.equal(none.revoked, 0);
    assert.equal(unknownPerson.exitCode, 3);
    const [one, ...rest] = await auditEntriesAfter(t.db, start);
    assert.equal(rest.length, 2);
    for (const entry of [one!, ...rest]) {
      assert.equal(entry.action, 'session.revoked');
      assert.deepEqual(entry.actor, cliActor);
      assert.equal(entry.customer, null);
      assert.deepEqual((entry.before as { person: unknown }).person, { id: person.id, email: 'erin@example.com', name: 'Erin' });
    }
    assert.deepEqual(one!.entity, { type: 'session', id: handles[0] });
    assert.deepEqual(rest.map((entry) => entry.entity.id).sort(), handles.slice(1).sort());
    assert.equal(rest[0]!.time, rest[1]!.time, 'one transaction: one time');
  });

  test('no token or cookie secret is in any stored entry, and the chain is intact', async () => {
    await chainAllPendingEntries(t.db);
    const stored = (await t.db.selectFrom('audit_entries').selectAll().execute()).map((row) => JSON.stringify(row)).join('\n');
    assert.ok(secrets.length >= 5);
    for (const secret of secrets) assert.ok(!stored.includes(secret), 'a secret reached an entry');
    await assertAuditChainIntact(t.db);
  });
});
