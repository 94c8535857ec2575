import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { entryHash } from '../../src/audit/chain.ts';
import { shipAuditEntries } from '../../src/webhooks/audit-events.ts';
import { DEPLOYMENT_OWNER, customerOwner } from '../../src/webhooks/secrets.ts';
import { ACLS, sampleAcl } from '../acl/helpers.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call } from '../okm/admin-helpers.ts';
import { createFleetEndpoint, verifiedFleetEvents } from './fleet-event-helpers.ts';
import { FAST_WEBHOOKS, Receiver } from './helpers.ts';

forEachDatabase('the audit.entry fleet event', (kind) => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, FAST_WEBHOOKS);
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  test("each entry reaches the endpoints that subscribe, once: a customer's its customer's entries, a deployment-wide one all", async () => {
    const admin = await issueTestToken(t, { scopes: ['admin'] });
    const acmeSubscriber = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write', 'audit:read', 'acl:read', 'acl:create', 'acl:delete'] });
    const betaWriter = await issueTestToken(t, { customer: 'beta', scopes: ['acl:read', 'acl:create'] });
    await shipAuditEntries(t.db);
    const acmeEndpoint = await createFleetEndpoint(t, receiver, acmeSubscriber, '/siem-acme', ['audit.entry']);
    const fleetEndpoint = await createFleetEndpoint(t, receiver, admin, '/siem-fleet', ['audit.entry']);
    const acmeAcl = sampleAcl('acme');
    assert.equal((await call(t, 'POST', ACLS, { token: acmeSubscriber, payload: acmeAcl })).statusCode, 201);
    assert.equal((await call(t, 'POST', ACLS, { token: betaWriter, payload: sampleAcl('beta') })).statusCode, 201);
    await shipAuditEntries(t.db);
    await shipAuditEntries(t.db);

    const acmeId = (await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id;
    const acmeEvents = await eventually(async () => {
      const events = await verifiedFleetEvents(t, receiver, acmeEndpoint.path, customerOwner(acmeId));
      return events.some((event) => event.data.action === 'acl.created') && events;
    });
    const fleetEvents = await eventually(async () => {
      const events = await verifiedFleetEvents(t, receiver, fleetEndpoint.path, DEPLOYMENT_OWNER);
      return events.filter((event) => event.data.action === 'acl.created').length >= 2 && events;
    });
    const aclCreations = (events: typeof acmeEvents) => events.filter((event) => event.data.action === 'acl.created');
    assert.deepEqual(aclCreations(acmeEvents).map((event) => (event.data.entity as { id: string }).id), [acmeAcl.id]);
    assert.deepEqual(aclCreations(fleetEvents).map((event) => event.data.customer).sort(), ['acme', 'beta']);
    for (const event of [...acmeEvents, ...fleetEvents]) {
      assert.equal(event.type, 'audit.entry');
      assert.equal(entryHash(event.data as never), event.data.hash);
    }
    // Every entry once: ids never repeat on an endpoint.
    const ids = fleetEvents.map((event) => event.data.id);
    assert.equal(new Set(ids).size, ids.length);
  });

  test('only a principal that may read the audit trail subscribes an endpoint to it: 403 otherwise, on create and on PATCH', async () => {
    const writer = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
    const refused = await call(t, 'POST', '/api/v1/webhook-endpoints', { token: writer, payload: { url: receiver.url('/no-audit'), event_types: ['audit.entry'] } });
    assert.equal(refused.statusCode, 403);
    assert.deepEqual(refused.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'event_types: audit.entry needs the audit:read scope' });
    const plain = await createFleetEndpoint(t, receiver, writer, '/plain', ['okm.overdue']);
    const patched = await call(t, 'PATCH', `/api/v1/webhook-endpoints/${plain.id}`, { token: writer, payload: { event_types: ['okm.overdue', 'audit.entry'] } });
    assert.equal(patched.statusCode, 403);
  });
});
