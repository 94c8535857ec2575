import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { canonicalJson } from '../../src/shared/canonical-json.ts';
import { canonicalUsersJson } from '../../src/acl/model.ts';
import type { AclUser } from '../../src/acl/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { anyValidAcl, corruptionsOf } from './arbitraries.ts';
import { ACLS, call, issueAclTokens, type AclBodyFixture, type AclTokens } from './helpers.ts';

test('the users\' JSON written for an OKM is RFC 8785 canonical JSON, so its digest is the list digest', () => {
  fc.assert(
    fc.property(anyValidAcl('acme'), (acl) => {
      assert.equal(canonicalUsersJson(acl.users as AclUser[]), canonicalJson(acl.users));
    }),
  );
});

forEachDatabase('ACL properties', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  test('any valid ACL round-trips unchanged: POST and GET give it back, user_data as the very text sent', async () => {
    await fc.assert(
      fc.asyncProperty(anyValidAcl('acme'), async (acl) => {
        const body = JSON.stringify(acl);

        const created = await call(t, 'POST', ACLS, { token: tokens.acme, payload: body, headers: { 'content-type': 'application/json' } });
        const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

        assert.equal(created.statusCode, 201, created.body);
        assert.deepEqual(created.json().data, acl);
        assert.deepEqual(fetched.json().data, acl);
        if (acl.user_data !== undefined) assert.ok(fetched.body.endsWith(`"user_data":${JSON.stringify(acl.user_data)}}}`));
      }),
      { numRuns: 60 },
    );
  });

  test('any single-field corruption of a valid ACL is a 400 that names that field, and nothing is stored', async () => {
    const corrupted = anyValidAcl('acme', { minUsers: 2, minLocks: 2 }).chain((acl) =>
      fc.nat().chain((pick) => fc.constantFrom(...corruptionsOf(acl, pick)).map((corruption) => ({ acl, corruption }))),
    );
    await fc.assert(
      fc.asyncProperty(corrupted, async ({ acl, corruption }) => {
        const body = structuredClone(acl) as AclBodyFixture & Record<string, unknown>;
        corruption.apply(body);

        const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: body });

        assert.equal(response.statusCode, 400, `${corruption.field}: ${response.body}`);
        const message: string = response.json().error_msg;
        assert.ok(message.startsWith(`${corruption.field}: `), `expected ${corruption.field}, got ${message}`);
        assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
      }),
      { numRuns: 150 },
    );
  });
});
