import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { ACLS, aclUser, call, createOkm, issueAclTokens, sampleAcl, type AclBodyFixture, type AclTokens } from './helpers.ts';
import { uniqueSerial } from '../okm/admin-helpers.ts';

const removal = (userId: number, customer: string) => `/api/v1/acl-users/${userId}/removal?customer=${customer}`;

let users = 700_000_000 + (process.pid % 1000) * 1000;
const freshUser = () => ++users;

/** An ACL of the customer over three locks whose users are `userIds` (each with access to every lock). */
function aclOf(customer: string, userIds: number[], extra: Partial<AclBodyFixture> = {}): AclBodyFixture & { id: string } {
  return { ...sampleAcl(customer), users: userIds.map((id) => aclUser(id, [1, 0, 17])), ...extra };
}

forEachDatabase('Offboarding: a user removed from every ACL of a customer', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind, { BULK_ACTION_MAX: '3' });
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  const post = async (body: AclBodyFixture) => {
    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: body });
    assert.equal(response.statusCode, 201, response.body);
  };
  const usersOf = async (id: string, token = tokens.acme, customer = 'acme') => {
    const response = await call(t, 'GET', `${ACLS}/${id}?customer=${customer}`, { token });
    return (response.json().data.users as { user_id: number }[]).map((user) => user.user_id);
  };

  test('the preview lists the ACLs holding the user and their OKMs; the removal does exactly that, in one go, with one acl.updated entry per ACL naming only the user removed', async () => {
    const leaving = freshUser();
    const staying = freshUser();
    const serial = uniqueSerial('OFF');
    await createOkm(t, tokens.acmeOkm, serial);
    const linked = aclOf('acme', [staying, leaving], { okm_id: serial, name: 'North shop' });
    const plain = aclOf('acme', [leaving]);
    const without = aclOf('acme', [staying]);
    for (const acl of [linked, plain, without]) await post(acl);

    const preview = await call(t, 'GET', removal(leaving, 'acme'), { token: tokens.acmeRead });
    assert.equal(preview.statusCode, 200, preview.body);
    const expected = [linked, plain].map((acl) => acl.id).sort();
    assert.deepEqual(
      preview.json().data.acls.map((acl: { id: string }) => acl.id),
      expected,
    );
    assert.deepEqual(preview.json().data.okm_ids, [serial]);
    assert.equal(preview.json().data.applied, false);
    assert.deepEqual(await usersOf(plain.id), [leaving], 'the preview changes nothing');

    const since = await lastAuditId(t.db);
    const applied = await call(t, 'POST', removal(leaving, 'acme'), { token: tokens.acme, payload: { acl_ids: expected } });
    assert.equal(applied.statusCode, 200, applied.body);
    assert.deepEqual(applied.json().data, { ...preview.json().data, applied: true });

    assert.deepEqual(await usersOf(linked.id), [staying]);
    assert.deepEqual(await usersOf(plain.id), []);
    assert.deepEqual(await usersOf(without.id), [staying]);
    const okm = await call(t, 'GET', `/api/v1/okms/${serial}`, { token: tokens.acmeOkm });
    assert.deepEqual(okm.json().data.users_assets.map((user: { user_id: number }) => user.user_id), [staying], "the linked OKM's user list is the ACL's");
    const found = await call(t, 'GET', `${ACLS}?customer=acme&user_id=${leaving}`, { token: tokens.acme });
    assert.equal(found.json().pagination.total_results, '0', 'the search by user finds it in no ACL');

    const entries = await auditEntriesAfter(t.db, since);
    assert.deepEqual(entries.map((entry) => [entry.action, entry.entity.id]).sort(), expected.map((id) => ['acl.updated', id]));
    for (const entry of entries) {
      assert.equal(entry.request_id, applied.headers['x-request-id'] ?? entry.request_id);
      assert.deepEqual(Object.keys(entry.before as object), ['users']);
      assert.deepEqual(Object.keys((entry.before as { users: object }).users), [String(leaving)]);
      assert.deepEqual((entry.after as { users: object }).users, { [leaving]: null });
    }
  });

  test("a removal gives each ACL changed a new version: a PUT with the ETag read before it is a 412, so an editor open meanwhile cannot put the user back", async () => {
    const leaving = freshUser();
    const acl = aclOf('acme', [leaving, freshUser()]);
    await post(acl);
    const etag = (await call(t, 'GET', `${ACLS}/${acl.id}?customer=acme`, { token: tokens.acme })).headers.etag as string;
    assert.ok(etag);
    assert.equal((await call(t, 'POST', removal(leaving, 'acme'), { token: tokens.acme, payload: {} })).statusCode, 200);
    const stale = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: acl, headers: { 'if-match': etag } });
    assert.equal(stale.statusCode, 412, stale.body);
    assert.equal((await usersOf(acl.id)).includes(leaving), false);
  });

  test('a user in no ACL: an empty preview, and a removal that changes nothing and records nothing', async () => {
    const nobody = freshUser();
    const preview = await call(t, 'GET', removal(nobody, 'acme'), { token: tokens.acmeRead });
    assert.deepEqual(preview.json().data, { customer: 'acme', user_id: nobody, acls: [], okm_ids: [], over_limit: false, applied: false });
    const since = await lastAuditId(t.db);
    const applied = await call(t, 'POST', removal(nobody, 'acme'), { token: tokens.acme, payload: {} });
    assert.equal(applied.statusCode, 200);
    assert.deepEqual(applied.json().data.acls, []);
    assert.deepEqual(await auditEntriesAfter(t.db, since), []);
  });

  test("a customer's token touches only its own ACLs: another customer's ACLs keep the user, and naming that customer is 403", async () => {
    const shared = freshUser();
    const acme = aclOf('acme', [shared]);
    const beta = aclOf('beta', [shared]);
    await post(acme);
    assert.equal((await call(t, 'POST', ACLS, { token: tokens.beta, payload: beta })).statusCode, 201);

    for (const [method, token] of [['GET', tokens.acmeRead], ['POST', tokens.acme]] as const) {
      const response = await call(t, method, removal(shared, 'beta'), { token, payload: method === 'POST' ? {} : undefined });
      assert.equal(response.statusCode, 403, `${method}: ${response.body}`);
    }
    const applied = await call(t, 'POST', removal(shared, 'acme'), { token: tokens.acme, payload: {} });
    assert.deepEqual(applied.json().data.acls.map((acl: { id: string }) => acl.id), [acme.id]);
    assert.deepEqual(await usersOf(beta.id, tokens.beta, 'beta'), [shared]);
  });

  test('scopes: the preview needs acl:read, the removal acl:create too', async () => {
    const user = freshUser();
    const denied = await call(t, 'POST', removal(user, 'acme'), { token: tokens.acmeRead, payload: {} });
    assert.equal(denied.statusCode, 403);
    const noAcl = await call(t, 'GET', removal(user, 'acme'), { token: tokens.acmeOkm });
    assert.equal(noAcl.statusCode, 403);
  });

  test('a user in more ACLs than BULK_ACTION_MAX: the preview says so and the removal is 409, nothing changes', async () => {
    const everywhere = freshUser();
    const acls = Array.from({ length: 4 }, () => aclOf('acme', [everywhere]));
    for (const acl of acls) await post(acl);
    const preview = await call(t, 'GET', removal(everywhere, 'acme'), { token: tokens.acmeRead });
    assert.equal(preview.statusCode, 200, preview.body);
    assert.equal(preview.json().data.over_limit, true);
    assert.equal(preview.json().data.acls.length, 3);
    const applied = await call(t, 'POST', removal(everywhere, 'acme'), { token: tokens.acme, payload: {} });
    assert.equal(applied.statusCode, 409);
    assert.match(applied.json().error_msg, /more than 3 ACLs/);
    for (const acl of acls) assert.deepEqual(await usersOf(acl.id), [everywhere]);
  });

  test('acl_ids that are not the ACLs holding the user now: 409, nothing changes', async () => {
    const user = freshUser();
    const first = aclOf('acme', [user]);
    await post(first);
    const preview = (await call(t, 'GET', removal(user, 'acme'), { token: tokens.acmeRead })).json().data;
    const second = aclOf('acme', [user]);
    await post(second);
    const applied = await call(t, 'POST', removal(user, 'acme'), { token: tokens.acme, payload: { acl_ids: preview.acls.map((acl: { id: string }) => acl.id) } });
    assert.equal(applied.statusCode, 409, applied.body);
    assert.deepEqual(await usersOf(first.id), [user]);
    assert.deepEqual(await usersOf(second.id), [user]);
  });

  test('bad parameters are 400: a user id out of range, no customer, an unknown body member', async () => {
    for (const [url, payload] of [
      [`/api/v1/acl-users/1000000000/removal?customer=acme`, {}],
      [`/api/v1/acl-users/12/removal`, {}],
      [`/api/v1/acl-users/12/removal?customer=acme`, { everything: true }],
      [`/api/v1/acl-users/12/removal?customer=acme`, { acl_ids: ['not-a-uuid'] }],
    ] as const) {
      const response = await call(t, 'POST', url, { token: tokens.acme, payload });
      assert.equal(response.statusCode, 400, `${url} ${JSON.stringify(payload)}: ${response.body}`);
    }
  });

  test('a failure of any audit entry rolls the whole removal back: every ACL keeps the user', async () => {
    const user = freshUser();
    const acls = [aclOf('acme', [user, freshUser()]), aclOf('acme', [user])];
    for (const acl of acls) await post(acl);
    const response = await withFailureAfterEachAuditEntry(t.db, kind, () => call(t, 'POST', removal(user, 'acme'), { token: tokens.acme, payload: {} }));
    assert.equal(response.statusCode, 500);
    for (const acl of acls) assert.ok((await usersOf(acl.id)).includes(user));
  });
});
