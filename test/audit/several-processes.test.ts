import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/server.ts';
import { ACLS, sampleAcl } from '../acl/helpers.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTestToken } from '../helpers/tokens.ts';

/**
 * One chain per deployment, also with several server processes on one database: two app
 * instances (as two processes have, each its own chainer and pool) take changes at once.
 */
forEachDatabase('the audit chain with several server processes', (kind) => {
  let t: TestApp;
  let other: FastifyInstance;
  before(async () => {
    t = await buildTestApp(kind);
    other = await buildServer({ settings: t.settings, db: t.db, dialect: t.dialect, keyRing: t.app.keyRing });
    await other.ready();
  });
  after(async () => {
    await other?.close();
    await t?.close();
  });

  test('changes taken by two processes at once all reach the one chain, each once, in an order every link of which verifies', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create'] });
    const start = await lastAuditId(t.db);
    const acls = Array.from({ length: 40 }, () => sampleAcl('acme'));
    const answers = await Promise.all(
      acls.map((acl, index) => (index % 2 === 0 ? t.app : other).inject({ method: 'POST', url: ACLS, headers: { authorization: `Bearer ${token}` }, payload: acl })),
    );
    assert.ok(answers.every((answer) => answer.statusCode === 201));

    // Each process's own chainer places what both wrote, without the test chaining anything.
    await eventually(async () => (await t.db.selectFrom('audit_pending').select('id').execute()).length === 0, 5_000, 'every entry chained by the servers');
    const appended = await auditEntriesAfter(t.db, start);
    assert.deepEqual(appended.map((entry) => entry.id), acls.map((_, index) => start + index + 1));
    assert.deepEqual(new Set(appended.map((entry) => entry.entity.id)), new Set(acls.map((acl) => acl.id)));
    await assertAuditChainIntact(t.db);
  });
});
