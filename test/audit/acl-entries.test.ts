import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { REDACTED, REDACTED_CHANGED } from '../../src/audit/redaction.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { ACLS, aclUser, call, issueAclTokens, sampleAcl, type AclTokens } from '../acl/helpers.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';

forEachDatabase('audit entries of ACL changes', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  test('a creation, a change of one cell and a deletion each append one entry, naming actor, customer, request and what changed', async () => {
    const acl = { ...sampleAcl('acme'), locks: ['L1', 'L7'], users: [aclUser(1234, [1, 0]), aclUser(55, [1, 1])] };
    const start = await lastAuditId(t.db);

    const created = await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl, headers: { 'user-agent': 'audit-test/1.0' } });
    const changed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...acl, users: [aclUser(1234, [1, 1]), aclUser(55, [1, 1])] } });
    const deleted = await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.deepEqual([created.statusCode, changed.statusCode, deleted.statusCode], [201, 200, 204]);
    const [creation, change, deletion, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.deepEqual([creation!.action, change!.action, deletion!.action], ['acl.created', 'acl.updated', 'acl.deleted']);
    for (const entry of [creation!, change!, deletion!]) {
      assert.equal(entry.customer, 'acme');
      assert.deepEqual(entry.entity, { type: 'acl', id: acl.id });
      assert.equal(entry.actor.kind, 'token');
      assert.equal(entry.ip, '127.0.0.1');
      assert.match(entry.request_id!, /.+/);
    }
    assert.equal(creation!.user_agent, 'audit-test/1.0');
    assert.equal(creation!.before, null);
    assert.deepEqual((creation!.after as { users: Record<string, { access: Record<string, number> }> }).users['1234']!.access, { L1: 1 });
    assert.deepEqual(change!.before, { users: { '1234': { access: { L7: 0 } } } });
    assert.deepEqual(change!.after, { users: { '1234': { access: { L7: 1 } } } });
    assert.equal(deletion!.after, null);
    assert.deepEqual(Object.keys((deletion!.before as { users: object }).users).sort(), ['1234', '55']);
    await assertAuditChainIntact(t.db);
  });

  test('PIN hashes never reach an entry: a created user reads redacted, a changed PIN reads "changed", an unchanged one is not mentioned', async () => {
    const acl = { ...sampleAcl('acme'), locks: ['L1'], users: [aclUser(1, [1]), aclUser(2, [1])] };
    const start = await lastAuditId(t.db);
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
    await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...acl, users: [{ ...aclUser(1, [1]), pin_hash: 'newPin1' }, aclUser(2, [1])] } });

    const [creation, change] = await auditEntriesAfter(t.db, start);
    assert.equal((creation!.after as { users: Record<string, { pin_hash: string }> }).users['1']!.pin_hash, REDACTED);
    assert.deepEqual(change!.before, { users: { '1': { pin_hash: REDACTED } } });
    assert.deepEqual(change!.after, { users: { '1': { pin_hash: REDACTED_CHANGED } } });
    await chainAllPendingEntries(t.db);
    const stored = await t.db.selectFrom('audit_entries').select(['before_json', 'after_json']).execute();
    assert.ok(stored.every((row) => !`${row.before_json}${row.after_json}`.includes('pin1hash') && !`${row.after_json}`.includes('newPin1')));
  });

  test('a refused change appends nothing', async () => {
    const start = await lastAuditId(t.db);
    const missing = sampleAcl('acme');
    const refused = await call(t, 'PUT', `${ACLS}/${missing.id}`, { token: tokens.acme, payload: missing });
    assert.equal(refused.statusCode, 404);
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
  });

  test('a change that fails after its entry is written leaves neither the change nor the entry', async () => {
    const acl = sampleAcl('acme');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
    const start = await lastAuditId(t.db);
    await withFailureAfterEachAuditEntry(t.db, kind, async () => {
      const failed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...acl, locks: ['ZZZ'], users: [] } });
      assert.equal(failed.statusCode, 500);
    });

    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    const stored = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acmeRead });
    assert.deepEqual(stored.json().data.locks, acl.locks);
  });

  test('concurrent changes through the pool chain one after the other: every id once, every link intact', async () => {
    const acls = Array.from({ length: 12 }, () => sampleAcl('acme'));
    const start = await lastAuditId(t.db);
    const answers = await Promise.all(acls.map((acl) => call(t, 'POST', ACLS, { token: tokens.acme, payload: acl })));
    assert.ok(answers.every((answer) => answer.statusCode === 201));
    const appended = await auditEntriesAfter(t.db, start);
    assert.deepEqual(appended.map((entry) => entry.id), acls.map((_, index) => start + index + 1));
    await assertAuditChainIntact(t.db);
  });
});
