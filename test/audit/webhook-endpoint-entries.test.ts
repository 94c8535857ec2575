import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { customerOwner, webhookSecrets } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call } from '../okm/admin-helpers.ts';

const ENDPOINTS = '/api/v1/webhook-endpoints';

/** What the tests compare of an entry: who, what, of whom, and the change. */
const summary = (entry: AuditEntry) => ({
  action: entry.action,
  entity: entry.entity,
  customer: entry.customer,
  actor: entry.actor.kind,
  before: entry.before,
  after: entry.after,
});

forEachDatabase('audit entries of webhook endpoint changes', (kind) => {
  let t: TestApp;
  let acme: string;
  let globex: string;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    acme = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
    globex = await issueTestToken(t, { customer: 'globex', scopes: ['okm:read', 'okm:write'] });
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  test('a creation, a change and a deletion each append one entry, by the token, of the customer, holding url and event types and never a secret; a test event appends none', async () => {
    const start = await lastAuditId(t.db);
    const created = await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'https://hooks.example/a', event_types: ['okm.overdue'] }, headers: { 'user-agent': 'audit-test/1.0' } });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.id as number;
    const tested = await call(t, 'POST', `${ENDPOINTS}/${id}/test`, { token: acme });
    assert.equal(tested.statusCode, 202, tested.body);
    const changed = await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { url: 'https://hooks.example/b', event_types: ['okm.overdue', 'okm.back_online'] } });
    const eventsOnly = await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { event_types: ['okm.back_online'] } });
    const unchanged = await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { event_types: ['okm.back_online'] } });
    const deleted = await call(t, 'DELETE', `${ENDPOINTS}/${id}`, { token: acme });
    assert.deepEqual([changed.statusCode, eventsOnly.statusCode, unchanged.statusCode, deleted.statusCode], [200, 200, 200, 204]);

    const entries = await auditEntriesAfter(t.db, start);
    const entity = { type: 'webhook_endpoint', id: String(id) };
    assert.deepEqual(entries.map(summary), [
      { action: 'webhook_endpoint.created', entity, customer: 'acme', actor: 'token', before: null, after: { url: 'https://hooks.example/a', event_types: ['okm.overdue'] } },
      {
        action: 'webhook_endpoint.updated',
        entity,
        customer: 'acme',
        actor: 'token',
        before: { url: 'https://hooks.example/a', event_types: ['okm.overdue'] },
        after: { url: 'https://hooks.example/b', event_types: ['okm.overdue', 'okm.back_online'] },
      },
      { action: 'webhook_endpoint.updated', entity, customer: 'acme', actor: 'token', before: { event_types: ['okm.overdue', 'okm.back_online'] }, after: { event_types: ['okm.back_online'] } },
      { action: 'webhook_endpoint.deleted', entity, customer: 'acme', actor: 'token', before: { url: 'https://hooks.example/b', event_types: ['okm.back_online'] }, after: null },
    ]);
    assert.equal(entries[0]!.user_agent, 'audit-test/1.0');
    for (const entry of entries) {
      assert.equal(entry.ip, '127.0.0.1');
      assert.match(entry.request_id!, /.+/);
    }

    // The customer's signing secret (which signs the endpoint's deliveries, among them the test event) is in no entry.
    const acmeId = (await findCustomerByName(t.db, 'acme'))!.id;
    const { current } = await webhookSecrets(t.db, t.app.keyRing, customerOwner(acmeId), Date.now());
    await chainAllPendingEntries(t.db);
    const stored = await t.db.selectFrom('audit_entries').select(['entity_type', 'before_json', 'after_json']).execute();
    assert.ok(stored.every((row) => !`${row.before_json}${row.after_json}`.includes(current)));
    assert.ok(stored.filter((row) => row.entity_type === 'webhook_endpoint').every((row) => !/secret/i.test(`${row.before_json}${row.after_json}`)));
    await assertAuditChainIntact(t.db);
  });

  test('a deployment-wide endpoint (an admin naming no customer) is recorded with customer null', async () => {
    const start = await lastAuditId(t.db);
    const created = await call(t, 'POST', ENDPOINTS, { token: admin, payload: { url: 'https://hooks.example/fleet', event_types: ['okm.overdue'] } });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.id as number;
    assert.equal((await call(t, 'DELETE', `${ENDPOINTS}/${id}`, { token: admin })).statusCode, 204);

    assert.deepEqual(
      (await auditEntriesAfter(t.db, start)).map((entry) => [entry.action, entry.customer, entry.entity.id]),
      [
        ['webhook_endpoint.created', null, String(id)],
        ['webhook_endpoint.deleted', null, String(id)],
      ],
    );
  });

  test('refused calls append nothing: a bad URL, a private address, another customer’s endpoint, a missing one, a bad patch', async () => {
    const created = await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'https://hooks.example/kept', event_types: ['okm.overdue'] } });
    const id = created.json().data.id as number;
    const start = await lastAuditId(t.db);

    const refused = [
      await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'ftp://hooks.example/a', event_types: ['okm.overdue'] } }),
      await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'http://127.0.0.1/a', event_types: ['okm.overdue'] } }),
      await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'https://hooks.example/a', event_types: [] } }),
      await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: globex, payload: { url: 'https://hooks.example/stolen' } }),
      await call(t, 'DELETE', `${ENDPOINTS}/${id}`, { token: globex }),
      await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { url: 'http://10.0.0.1/inside' } }),
      await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { secret: 'whsec_guess' } }),
      await call(t, 'DELETE', `${ENDPOINTS}/999999`, { token: acme }),
      await call(t, 'POST', `${ENDPOINTS}/999999/test`, { token: acme }),
    ];

    assert.deepEqual(
      refused.map((response) => response.statusCode),
      [400, 400, 400, 404, 404, 400, 400, 404, 404],
    );
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    assert.equal((await call(t, 'GET', `${ENDPOINTS}/${id}`, { token: acme })).json().data.url, 'https://hooks.example/kept');
  });

  test('a change that fails after its entry is written leaves neither the change nor the entry', async () => {
    const created = await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'https://hooks.example/before', event_types: ['okm.overdue'] } });
    const id = created.json().data.id as number;
    const start = await lastAuditId(t.db);
    await withFailureAfterEachAuditEntry(t.db, kind, async () => {
      const patched = await call(t, 'PATCH', `${ENDPOINTS}/${id}`, { token: acme, payload: { url: 'https://hooks.example/after' } });
      const deleted = await call(t, 'DELETE', `${ENDPOINTS}/${id}`, { token: acme });
      const createdAnother = await call(t, 'POST', ENDPOINTS, { token: acme, payload: { url: 'https://hooks.example/another', event_types: ['okm.overdue'] } });
      assert.deepEqual([patched.statusCode, deleted.statusCode, createdAnother.statusCode], [500, 500, 500]);
    });

    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    assert.equal((await call(t, 'GET', `${ENDPOINTS}/${id}`, { token: acme })).json().data.url, 'https://hooks.example/before');
    const urls = (await call(t, 'GET', ENDPOINTS, { token: acme })).json().data.map((endpoint: { url: string }) => endpoint.url);
    assert.ok(!urls.includes('https://hooks.example/another'));
    await assertAuditChainIntact(t.db);
  });
});
