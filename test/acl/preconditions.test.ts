import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial } from '../device/config-helpers.ts';
import { ACLS, aclUser, call, createOkm, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const RACE_ROUNDS = 25;

forEachDatabase('ACL preconditions (If-Match, RFC 9110)', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  async function createdAcl() {
    const acl = sampleAcl('acme');
    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
    assert.equal(response.statusCode, 201);
    return { acl, etag: response.headers.etag as string };
  }

  const withUser = (acl: ReturnType<typeof sampleAcl>, userId: number) => ({ ...acl, users: [...acl.users, aclUser(userId, acl.locks.map(() => 1))] });

  test('a read and every write answer with the same strong ETag for the same version', async () => {
    const { acl, etag } = await createdAcl();
    const read = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(read.headers.etag, etag);
    const replaced = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 900), headers: { 'if-match': etag } });
    assert.equal(replaced.statusCode, 200);
    assert.notEqual(replaced.headers.etag, etag);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).headers.etag, replaced.headers.etag);
  });

  test('a stale If-Match is a 412 holding the current version and its ETag; nothing is written', async () => {
    const { acl, etag } = await createdAcl();
    const theirs = withUser(acl, 901);
    const theirWrite = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: theirs });

    const mine = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 902), headers: { 'if-match': etag } });

    assert.equal(mine.statusCode, 412);
    assert.equal(mine.headers.etag, theirWrite.headers.etag);
    const body = mine.json();
    assert.equal(body.error_code, 'PRECONDITION_FAILED');
    assert.match(body.error_msg, /^If-Match: /);
    assert.deepEqual(body.current, theirWrite.json().data);
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data.users, theirWrite.json().data.users);
  });

  test('a stale If-Match on DELETE is a 412 and the ACL stays; the current one deletes it', async () => {
    const { acl, etag } = await createdAcl();
    const changed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 903) });

    const stale = await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme, headers: { 'if-match': etag } });
    const current = await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme, headers: { 'if-match': changed.headers.etag as string } });

    assert.equal(stale.statusCode, 412);
    assert.equal(current.statusCode, 204);
  });

  test('a change of the link alone gives another ETag (a PUT may set okm_id)', async () => {
    const { acl, etag } = await createdAcl();
    const serial = newSerial('ETAG');
    await createOkm(t, tokens.acmeOkm, serial);

    const linked = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...acl, okm_id: serial }, headers: { 'if-match': etag } });

    assert.equal(linked.statusCode, 200);
    assert.notEqual(linked.headers.etag, etag);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).headers.etag, linked.headers.etag);
  });

  test('If-Match: * matches any version of an existing ACL; on POST of a missing id it is a 412 and nothing is created', async () => {
    const { acl } = await createdAcl();
    const any = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 904), headers: { 'if-match': '*' } });
    const fresh = sampleAcl('acme');
    const created = await call(t, 'POST', ACLS, { token: tokens.acme, payload: fresh, headers: { 'if-match': '*' } });

    assert.equal(any.statusCode, 200);
    assert.equal(created.statusCode, 412);
    assert.deepEqual(created.json(), { error_code: 'PRECONDITION_FAILED', error_msg: 'If-Match: the resource does not exist', current: null });
    assert.equal((await call(t, 'GET', `${ACLS}/${fresh.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('a list of tags matches when one of them is current; a weak tag never matches (strong comparison)', async () => {
    const { acl, etag } = await createdAcl();

    const weak = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: acl, headers: { 'if-match': `W/${etag}` } });
    const listed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 905), headers: { 'if-match': `"x,y" , W/${etag},${etag}` } });

    assert.equal(weak.statusCode, 412);
    assert.equal(listed.statusCode, 200);
  });

  test('a malformed If-Match is a 400 and nothing is written', async () => {
    const { acl } = await createdAcl();
    for (const value of ['abc', '"unterminated', '', ' , ', '"a" "b"', '**']) {
      const response = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 906), headers: { 'if-match': value } });
      assert.equal(response.statusCode, 400, value);
      assert.equal(response.json().error_code, 'BAD_REQUEST');
    }
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data.users.length, acl.users.length);
  });

  test('without If-Match every write is unconditional, as before', async () => {
    const { acl } = await createdAcl();
    await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 907) });

    const blind = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 908) });

    assert.equal(blind.statusCode, 200);
    assert.equal(blind.json().message, 'Resource updated successfully');
  });

  test('a 404 stays a 404 whatever the If-Match (RFC 9110 §13.2.1)', async () => {
    const missing = sampleAcl('acme');
    const response = await call(t, 'PUT', `${ACLS}/${missing.id}`, { token: tokens.acme, payload: missing, headers: { 'if-match': '*' } });

    assert.equal(response.statusCode, 404);
  });

  test('changes by other paths change the ETag: offboarding a user, and the linked OKM moved to another customer (which unlinks the ACL)', async () => {
    // A user in this ACL alone: offboarding removes a user from every ACL of the customer.
    const leaving = 654_321;
    const acl = withUser(sampleAcl('acme'), leaving);
    const posted = await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
    assert.equal(posted.statusCode, 201);
    const etag = posted.headers.etag as string;
    const removed = await call(t, 'POST', `/api/v1/acl-users/${leaving}/removal?customer=acme`, { token: tokens.acme, payload: { acl_ids: [acl.id] } });
    assert.equal(removed.statusCode, 200, removed.body);
    const afterRemoval = (await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).headers.etag as string;
    assert.notEqual(afterRemoval, etag);
    assert.equal((await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: acl, headers: { 'if-match': etag } })).statusCode, 412, 'the offboarded user is not put back');

    const serial = newSerial('MOVE');
    await createOkm(t, tokens.acmeOkm, serial);
    const current = (await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data;
    const linked = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...current, okm_id: serial }, headers: { 'if-match': afterRemoval } });
    assert.equal(linked.statusCode, 200);
    assert.equal((await call(t, 'PUT', `/api/v1/okms/${serial}/customer`, { token: tokens.admin, payload: { customer: 'beta' } })).statusCode, 200);
    assert.notEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).headers.etag, linked.headers.etag);
  });

  test('two writers racing with the same If-Match: exactly one wins, the other gets a 412 naming the winner\'s version', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { acl, etag } = await createdAcl();
      const [first, second] = await Promise.all([
        call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 1000), headers: { 'if-match': etag } }),
        call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 2000), headers: { 'if-match': etag } }),
      ]);
      const statuses = [first.statusCode, second.statusCode].sort();
      assert.deepEqual(statuses, [200, 412], `round ${round}`);
      const [winner, loser] = first.statusCode === 200 ? [first, second] : [second, first];
      assert.equal(loser.headers.etag, winner.headers.etag);
      assert.deepEqual(loser.json().current, winner.json().data);
    }
  });

  test('a write racing a delete with the same If-Match: one of them wins', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { acl, etag } = await createdAcl();
      const [put, del] = await Promise.all([
        call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withUser(acl, 3000), headers: { 'if-match': etag } }),
        call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme, headers: { 'if-match': etag } }),
      ]);
      const outcome = `${put.statusCode}/${del.statusCode}`;
      assert.ok(outcome === '200/412' || outcome === '404/204', `round ${round}: ${outcome}`);
    }
  });
});
