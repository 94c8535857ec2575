import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { entryHash } from '../../src/audit/chain.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { ACLS, call, sampleAcl } from '../acl/helpers.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const AUDIT_LOG = '/api/v1/audit-log';

interface EntryJson {
  id: number;
  customer: string | null;
  action: string;
  entity: { type: string; id: string };
  actor: { kind: string; id: string; name: string };
  hash: string;
  [member: string]: unknown;
}

forEachDatabase('GET /api/v1/audit-log and its export', (kind) => {
  let t: TestApp;
  let auditor: string;
  let acmeAuditor: string;
  const acmeAcls = [sampleAcl('acme'), sampleAcl('acme'), sampleAcl('acme')];
  const betaAcl = sampleAcl('beta');
  before(async () => {
    t = await buildTestApp(kind);
    const acmeWriter = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create', 'acl:delete'], subject: 'acme-writer' });
    const betaWriter = await issueTestToken(t, { customer: 'beta', scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    auditor = await issueTestToken(t, { scopes: ['admin'] });
    acmeAuditor = await issueTestToken(t, { customer: 'acme', scopes: ['audit:read'] });
    for (const acl of acmeAcls) assert.equal((await call(t, 'POST', ACLS, { token: acmeWriter, payload: acl })).statusCode, 201);
    assert.equal((await call(t, 'DELETE', `${ACLS}/${acmeAcls[0]!.id}`, { token: acmeWriter })).statusCode, 204);
    assert.equal((await call(t, 'POST', ACLS, { token: betaWriter, payload: betaAcl })).statusCode, 201);
  });
  after(() => t.close());

  const search = async (query: string, token = auditor) => {
    const response = await call(t, 'GET', `${AUDIT_LOG}?${query}`, { token });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { data: EntryJson[]; next_cursor: string | null };
  };

  test('newest first, every entry as it was hashed: its hash is the canonical JSON of the rest', async () => {
    const { data } = await search('');
    assert.deepEqual(
      data.map((entry) => entry.id),
      [...data].map((entry) => entry.id).sort((a, b) => b - a),
    );
    assert.deepEqual(data.map((entry) => entry.action), ['acl.created', 'acl.deleted', 'acl.created', 'acl.created', 'acl.created']);
    for (const entry of data) assert.equal(entryHash(entry as never), entry.hash);
  });

  test('each filter narrows the selection: entity, action, customer, actor, time', async () => {
    const ofAcl = await search(`entity_type=acl&entity_id=${acmeAcls[0]!.id}`);
    assert.deepEqual(ofAcl.data.map((entry) => entry.action), ['acl.deleted', 'acl.created']);
    assert.equal((await search('action=acl.deleted')).data.length, 1);
    assert.ok((await search('customer=beta')).data.every((entry) => entry.customer === 'beta'));
    const actor = ofAcl.data[0]!.actor;
    assert.equal((await search(`actor=${actor.kind}:${actor.id}`)).data.length, 4);
    assert.equal((await search(`since=${new Date(Date.now() + 60_000).toISOString()}`)).data.length, 0);
    assert.equal((await search(`until=${new Date(Date.now() + 60_000).toISOString()}`)).data.length, 5);
  });

  test('cursor pages cover the selection once, with a Link to the next page', async () => {
    const first = await call(t, 'GET', `${AUDIT_LOG}?limit=2`, { token: auditor });
    assert.match(String(first.headers.link), /rel="next"/);
    const seen: number[] = first.json().data.map((entry: EntryJson) => entry.id);
    let cursor: string | null = first.json().next_cursor;
    while (cursor !== null) {
      const page = await search(`limit=2&cursor=${cursor}`);
      seen.push(...page.data.map((entry) => entry.id));
      cursor = page.next_cursor;
    }
    assert.deepEqual(seen, (await search('')).data.map((entry) => entry.id));
  });

  test("a customer's principal sees its own customer's entries only, and may not ask for another's", async () => {
    const own = await search('', acmeAuditor);
    assert.equal(own.data.length, 4);
    assert.ok(own.data.every((entry) => entry.customer === 'acme'));
    assert.equal((await call(t, 'GET', `${AUDIT_LOG}?customer=beta`, { token: acmeAuditor })).statusCode, 403);
  });

  test('without audit:read: 403; without a credential: 401; a filter outside the documented values: 400', async () => {
    const reader = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'okm:read'] });
    assert.equal((await call(t, 'GET', AUDIT_LOG, { token: reader })).statusCode, 403);
    assert.equal((await t.app.inject({ method: 'GET', url: AUDIT_LOG })).statusCode, 401);
    assert.equal((await call(t, 'GET', `${AUDIT_LOG}?action=acl.exploded`, { token: auditor })).statusCode, 400);
    assert.equal((await call(t, 'GET', `${AUDIT_LOG}?actor=nobody`, { token: auditor })).statusCode, 400);
    assert.equal((await call(t, 'GET', `${AUDIT_LOG}?since=yesterday`, { token: auditor })).statusCode, 400);
  });

  test('the export streams the same selection: NDJSON one entry a line, CSV with a header row', async () => {
    const ndjson = await call(t, 'GET', `${AUDIT_LOG}/export?format=ndjson&customer=acme`, { token: auditor });
    assert.equal(ndjson.statusCode, 200);
    assert.match(String(ndjson.headers['content-type']), /^application\/x-ndjson/);
    const lines = ndjson.body.trimEnd().split('\n').map((line) => JSON.parse(line) as EntryJson);
    assert.deepEqual(lines, (await search('customer=acme')).data);

    const csv = await call(t, 'GET', `${AUDIT_LOG}/export?format=csv&action=acl.deleted`, { token: auditor });
    assert.equal(csv.statusCode, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    assert.match(String(csv.headers['content-disposition']), /attachment; filename="keyfleet-audit-.*\.csv"/);
    const rows = csv.body.trimEnd().split('\r\n');
    assert.equal(rows.length, 2);
    assert.match(rows[0]!, /^id,time,actor_kind,actor_id,actor_name,customer,action,entity_type,entity_id,before,after/);
    assert.match(rows[1]!, /,acme,acl\.deleted,acl,/);
  });

  test('a CSV cell that starts like a spreadsheet formula is written as text', async () => {
    await t.db.updateTable('audit_entries').set({ user_agent: '=HYPERLINK("http://evil")' }).where('seq', '=', 1).execute();
    const csv = await call(t, 'GET', `${AUDIT_LOG}/export?format=csv`, { token: auditor });
    assert.ok(!csv.body.includes(',=HYPERLINK') && !csv.body.includes(',"=HYPERLINK'));
    assert.ok(csv.body.includes(`'=HYPERLINK`));
  });
});
