import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial } from '../device/config-helpers.ts';
import { ACLS, call, createOkm, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const NOT_FOUND = { error_code: 'NOT_FOUND', error_msg: 'Access control list not found' };

forEachDatabase('GET /api/v1/acls/{id}/okm', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  const linkOf = (id: string, token: string, query = '') => call(t, 'GET', `${ACLS}/${id}/okm${query}`, { token });

  async function aclLinkedToNewOkm() {
    const serial = newSerial('LINK');
    await createOkm(t, tokens.acmeOkm, serial);
    const acl = { ...sampleAcl('acme'), okm_id: serial };
    assert.equal((await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl })).statusCode, 201);
    return { acl, serial };
  }

  test('names the OKM a linked ACL is linked to, with acl:read only', async () => {
    const { acl, serial } = await aclLinkedToNewOkm();

    const response = await linkOf(acl.id, tokens.acmeRead);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { message: 'Resource fetched successfully', data: { acl_id: acl.id, okm_id: serial } });
  });

  test('is null for an ACL that is not linked, and after it is unlinked', async () => {
    const { acl } = await aclLinkedToNewOkm();
    const unlinked = sampleAcl('acme');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: unlinked });
    await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...acl, okm_id: null } });

    assert.equal((await linkOf(unlinked.id, tokens.acmeRead)).json().data.okm_id, null);
    assert.equal((await linkOf(acl.id, tokens.acmeRead)).json().data.okm_id, null);
  });

  test('another customer\'s ACL is answered as a missing one; an admin sees it, also with ?customer= of its owner', async () => {
    const { acl, serial } = await aclLinkedToNewOkm();

    const asBeta = await linkOf(acl.id, tokens.beta);
    const missing = await linkOf(sampleAcl('acme').id, tokens.acme);
    const asAdmin = await linkOf(acl.id.toUpperCase(), tokens.admin, '?customer=acme');

    assert.equal(asBeta.statusCode, 404);
    assert.deepEqual(asBeta.json(), NOT_FOUND);
    assert.deepEqual(missing.json(), NOT_FOUND);
    assert.deepEqual(asAdmin.json().data, { acl_id: acl.id, okm_id: serial });
  });

  test('a token without acl:read is refused with 403', async () => {
    const { acl } = await aclLinkedToNewOkm();

    const response = await linkOf(acl.id, tokens.acmeOkm);

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' });
  });
});
