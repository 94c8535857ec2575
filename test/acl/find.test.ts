import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, aclUser, call, issueAclTokens, sampleAcl, type AclBodyFixture, type AclTokens } from './helpers.ts';

const SUMMARIES = '/api/v1/acl-summaries';

interface Listed {
  statusCode: number;
  body: string;
  json(): { pagination: { page: number; results_per_page: string; total_results: string }; data: Array<{ id: string; name?: string }>; error_code?: string; error_msg: string };
}

/** An ACL of the customer whose users and locks are exactly those given. */
function aclWith(customer: string, userIds: number[], locks: string[], name?: string): AclBodyFixture & { id: string } {
  const sorted = [...locks].sort();
  return {
    ...sampleAcl(customer),
    users: userIds.map((userId) => aclUser(userId, sorted.map(() => 1))),
    locks: sorted,
    ...(name === undefined ? {} : { name }),
  } as AclBodyFixture & { id: string };
}

forEachDatabase('ACL names', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  const post = (acl: unknown, token = tokens.acme) => call(t, 'POST', ACLS, { token, payload: acl });

  test('a name sent with POST comes back from POST, GET, the list and the summaries', async () => {
    const acl = { ...sampleAcl('acme'), name: 'Store 412 – Berlin Mitte' };

    const created = await post(acl);
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });
    const listed = await call(t, 'GET', `${ACLS}?customer=acme&results_per_page=100`, { token: tokens.acme });
    const summaries = await call(t, 'GET', `${SUMMARIES}?customer=acme&limit=500`, { token: tokens.acme });

    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual(created.json().data, acl);
    assert.deepEqual(fetched.json().data, acl);
    assert.deepEqual(listed.json().data.find((item: { id: string }) => item.id === acl.id), acl);
    assert.equal(summaries.json().data.find((item: { id: string }) => item.id === acl.id).name, acl.name);
  });

  test('PUT and POST without a name keep the one set; null removes it; a new name replaces it', async () => {
    const acl = { ...sampleAcl('acme'), name: 'Depot North' };
    await post(acl);
    const { name: _name, ...withoutName } = acl;

    const kept = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: withoutName });
    const keptByPost = await post(withoutName);
    const renamed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...withoutName, name: 'Depot South' } });
    const removed = await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...withoutName, name: null } });
    const fetched = await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme });

    assert.equal(kept.json().data.name, 'Depot North');
    assert.equal(keptByPost.json().data.name, 'Depot North');
    assert.equal(renamed.json().data.name, 'Depot South');
    assert.equal('name' in removed.json().data, false);
    assert.deepEqual(fetched.json().data, withoutName);
  });

  test('without names and without search, the list of contract §0.6 is unchanged: the same members in the same order, no name', async () => {
    const acl = sampleAcl('gamma');
    const token = await issueTestToken(t, { customer: 'gamma', scopes: ['acl:read', 'acl:create'] });
    await call(t, 'POST', ACLS, { token, payload: acl });

    const response = await call(t, 'GET', `${ACLS}?customer=gamma`, { token });

    const { id, customer, users, locks, user_data: userData } = acl;
    assert.equal(
      response.body,
      `{"message":"Resource fetched successfully","pagination":{"page":1,"results_per_page":"30","total_results":"1"},"data":[${JSON.stringify({ id, customer, users: users.map(sortedMembers), locks, user_data: userData })}]}`,
    );
  });

  for (const [name, why] of [
    ['', 'empty'],
    ['   ', 'blank'],
    ['x'.repeat(101), 'longer than 100 characters'],
    ['Store\u0000412', 'a control character'],
    ['Store\n412', 'a line break'],
    [412, 'not a string'],
  ] as const) {
    test(`a name that is ${why} is a 400 naming name, and nothing is stored`, async () => {
      const acl = { ...sampleAcl('acme'), name };

      const response = await post(acl);

      assert.equal(response.statusCode, 400, response.body);
      assert.match(response.json().error_msg, /^name: /);
      assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
    });
  }

  test('a name of 100 characters, any script, is accepted', async () => {
    const acl = { ...sampleAcl('acme'), name: `Filiale Köln ✓ 東京 ${'x'.repeat(100 - 'Filiale Köln ✓ 東京 '.length)}` };

    const response = await post(acl);

    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.json().data.name, acl.name);
  });
});

/** A user object with its members in name order, as responses write them. */
function sortedMembers(user: object) {
  return Object.fromEntries(Object.entries(user).sort(([a], [b]) => (a < b ? -1 : 1)));
}

forEachDatabase('ACL search', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  const acls: Record<string, AclBodyFixture & { id: string }> = {};
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
    const fixtures = {
      berlin: aclWith('acme', [100, 101], ['LOCK-A', 'LOCK-B'], 'Store 412 Berlin'),
      hamburg: aclWith('acme', [101, 200], ['LOCK-B', 'LOCK-C'], 'store 4120 Hamburg'),
      depot: aclWith('acme', [300], ['LOCK-C'], 'Depot 50% off_site'),
      unnamed: aclWith('acme', [100], ['LOCK-Z']),
      // Another customer's ACL that every search below would find if tenancy leaked.
      beta: aclWith('beta', [100, 101, 200, 300], ['LOCK-A', 'LOCK-B', 'LOCK-C', 'LOCK-Z'], 'Store 412 Berlin'),
    };
    for (const [key, acl] of Object.entries(fixtures)) {
      const response = await call(t, 'POST', ACLS, { token: acl.customer === 'beta' ? tokens.beta : tokens.acme, payload: acl });
      assert.equal(response.statusCode, 201, response.body);
      acls[key] = acl;
    }
  });
  after(() => t.close());

  const list = (query: string, token = tokens.acme) => call(t, 'GET', `${ACLS}?customer=acme${query}`, { token }) as Promise<Listed>;
  const idsOf = (...keys: string[]) => keys.map((key) => acls[key]!.id).sort();
  const listedIds = (response: Listed) => response.json().data.map((acl) => acl.id);

  for (const [query, keys] of [
    ['&user_id=101', ['berlin', 'hamburg']],
    ['&user_id=100', ['berlin', 'unnamed']],
    ['&user_id=999999999', []],
    ['&lock=LOCK-B', ['berlin', 'hamburg']],
    ['&lock=LOCK-Z', ['unnamed']],
    ['&lock=lock-b', ['berlin', 'hamburg']],
    ['&lock=Lock-z', ['unnamed']],
    ['&name_contains=412', ['berlin', 'hamburg']],
    ['&name_contains=BERLIN', ['berlin']],
    ['&name_contains=store%204', ['berlin', 'hamburg']],
    ['&name_contains=50%25', ['depot']],
    ['&name_contains=%25', ['depot']],
    ['&name_contains=_', ['depot']],
    ['&name_contains=t%20', ['depot']],
    ['&user_id=101&lock=LOCK-A', ['berlin']],
    ['&user_id=101&name_contains=hamburg', ['hamburg']],
    ['&user_id=300&lock=LOCK-A', []],
  ] as const) {
    test(`${query.slice(1)} finds exactly ${keys.length === 0 ? 'nothing' : keys.join(', ')} of the customer, by id, with the total`, async () => {
      const response = await list(query);

      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(listedIds(response), idsOf(...keys));
      assert.deepEqual(response.json().pagination, { page: 1, results_per_page: '30', total_results: String(keys.length) });
    });
  }

  test('an admin searching acme\'s ACLs never sees beta\'s, and beta searching sees only its own', async () => {
    const asAdmin = await list('&user_id=101', tokens.admin);
    const asBeta = await call(t, 'GET', `${ACLS}?customer=beta&name_contains=berlin`, { token: tokens.beta });
    const betaNamingAcme = await call(t, 'GET', `${ACLS}?customer=acme&user_id=101`, { token: tokens.beta });

    assert.deepEqual(listedIds(asAdmin), idsOf('berlin', 'hamburg'));
    assert.deepEqual(listedIds(asBeta as Listed), [acls.beta!.id]);
    assert.equal(betaNamingAcme.statusCode, 403);
  });

  test('sort=name orders the summaries by name ignoring case, then the unnamed ones by id, page after page', async () => {
    const expected = [acls.depot!.id, acls.berlin!.id, acls.hamburg!.id, acls.unnamed!.id];
    for (const limit of [1, 2, 3, 500]) {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const response = await call(t, 'GET', `${SUMMARIES}?customer=acme&sort=name&limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`, { token: tokens.acme });
        assert.equal(response.statusCode, 200, response.body);
        ids.push(...response.json().data.map((summary: { id: string }) => summary.id));
        cursor = response.json().next_cursor;
      } while (cursor !== null);
      assert.deepEqual(ids, expected, `limit ${limit}`);
    }
    const searched = await call(t, 'GET', `${SUMMARIES}?customer=acme&sort=name&lock=LOCK-C`, { token: tokens.acme });
    assert.deepEqual(searched.json().data.map((summary: { id: string }) => summary.id), [acls.depot!.id, acls.hamburg!.id]);
  });

  test("a cursor of the summaries by id is not one of the summaries by name, and beta's token may not list acme's by name", async () => {
    const byId = (await call(t, 'GET', `${SUMMARIES}?customer=acme&limit=1`, { token: tokens.acme })).json();
    const mixed = await call(t, 'GET', `${SUMMARIES}?customer=acme&sort=name&cursor=${byId.next_cursor}`, { token: tokens.acme });
    const foreign = await call(t, 'GET', `${SUMMARIES}?customer=acme&sort=name`, { token: tokens.beta });

    assert.equal(mixed.statusCode, 400);
    assert.equal(foreign.statusCode, 403);
    assert.equal((await call(t, 'GET', `${SUMMARIES}?customer=acme&sort=size`, { token: tokens.acme })).statusCode, 400);
  });

  test('the summaries take the same search and show the name', async () => {
    const response = await call(t, 'GET', `${SUMMARIES}?customer=acme&name_contains=412`, { token: tokens.acme });

    assert.equal(response.statusCode, 200, response.body);
    const data: Array<{ id: string; name?: string }> = response.json().data;
    assert.deepEqual(data.map((summary) => summary.id), idsOf('berlin', 'hamburg'));
    assert.deepEqual(data.map((summary) => summary.name), [acls.berlin!, acls.hamburg!].sort((a, b) => (a.id < b.id ? -1 : 1)).map((acl) => acl.name));
    const unnamed = (await call(t, 'GET', `${SUMMARIES}?customer=acme&lock=LOCK-Z`, { token: tokens.acme })).json().data;
    assert.deepEqual(unnamed.map((summary: { id: string }) => summary.id), [acls.unnamed!.id]);
    assert.equal('name' in unnamed[0], false);
  });

  test('a write changes what a search finds: a user removed, a lock added, a rename, a delete', async () => {
    const acl = aclWith('acme', [700, 701], ['SEARCH-1'], 'Kiosk');
    await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
    const replaced = aclWith('acme', [701], ['SEARCH-1', 'SEARCH-2'], 'Pavilion');
    await call(t, 'PUT', `${ACLS}/${acl.id}`, { token: tokens.acme, payload: { ...replaced, id: acl.id } });

    assert.deepEqual(listedIds(await list('&user_id=700')), []);
    assert.deepEqual(listedIds(await list('&user_id=701')), [acl.id]);
    assert.deepEqual(listedIds(await list('&lock=SEARCH-2')), [acl.id]);
    assert.deepEqual(listedIds(await list('&name_contains=kiosk')), []);
    assert.deepEqual(listedIds(await list('&name_contains=pavil')), [acl.id]);

    assert.equal((await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 204);
    assert.deepEqual(listedIds(await list('&user_id=701')), []);
    assert.deepEqual(listedIds(await list('&lock=SEARCH-1')), []);
    assert.deepEqual(listedIds(await list('&name_contains=pavil')), []);
  });

  describe('bad search parameters', () => {
    for (const [query, parameter] of [
      ['&user_id=x', 'user_id'],
      ['&user_id=-1', 'user_id'],
      ['&user_id=1000000000', 'user_id'],
      ['&user_id=1.5', 'user_id'],
      ['&user_id=Infinity', 'user_id'],
      ['&user_id=1e400', 'user_id'],
      ['&user_id=NaN', 'user_id'],
      ['&lock=', 'lock'],
      ['&lock=LOCK%20A', 'lock'],
      [`&lock=${'L'.repeat(65)}`, 'lock'],
      ['&name_contains=', 'name_contains'],
      [`&name_contains=${'x'.repeat(101)}`, 'name_contains'],
      ['&name_contains=a%00b', 'name_contains'],
      ['&name_contains=a%0Ab', 'name_contains'],
      ['&nickname=x', 'nickname'],
    ] as const) {
      test(`${query.slice(1, 40)} is a 400 naming ${parameter}, on the list and the summaries`, async () => {
        const listed = await list(query);
        const summarised = await call(t, 'GET', `${SUMMARIES}?customer=acme${query}`, { token: tokens.acme });

        for (const response of [listed, summarised]) {
          assert.equal(response.statusCode, 400, response.body);
          assert.equal(response.json().error_code, 'BAD_REQUEST');
          assert.match(response.json().error_msg, new RegExp(`^(querystring\\.)?${parameter}: `));
        }
      });
    }

    test('authentication comes first: a bad parameter without a token is a 401', async () => {
      const response = await call(t, 'GET', `${ACLS}?customer=acme&user_id=x`, {});

      assert.equal(response.statusCode, 401);
    });
  });
});

forEachDatabase('ACL search with pages', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  const matching: string[] = [];
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
    for (let index = 0; index < 12; index++) {
      // Every other ACL holds user 42 and lock SHARED, and is named "Site …"; the rest are noise between them.
      const holds = index % 2 === 0;
      const acl = aclWith('acme', holds ? [42, index] : [1000 + index], holds ? ['SHARED', `OWN-${index}`] : [`OWN-${index}`], holds ? `Site ${index}` : `Other ${index}`);
      await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });
      if (holds) matching.push(acl.id);
    }
    matching.sort();
  });
  after(() => t.close());

  for (const query of ['&user_id=42', '&lock=SHARED', '&name_contains=site']) {
    test(`${query.slice(1)}: page by page, the matching ACLs by id, each once, with their total on every page`, async () => {
      const pages = [];
      for (let page = 1; page <= 3; page++) {
        const response = await call(t, 'GET', `${ACLS}?customer=acme${query}&results_per_page=4&page=${page}`, { token: tokens.acme });
        assert.deepEqual(response.json().pagination, { page, results_per_page: '4', total_results: '6' });
        pages.push(response.json().data.map((acl: { id: string }) => acl.id));
      }

      assert.deepEqual(pages, [matching.slice(0, 4), matching.slice(4), []]);
    });
  }

  test('the summaries walk the same matches by cursor', async () => {
    const first = (await call(t, 'GET', `${SUMMARIES}?customer=acme&user_id=42&limit=4`, { token: tokens.acme })).json();
    const second = (await call(t, 'GET', `${SUMMARIES}?customer=acme&user_id=42&limit=4&cursor=${encodeURIComponent(first.next_cursor)}`, { token: tokens.acme })).json();

    assert.deepEqual([...first.data, ...second.data].map((summary: { id: string }) => summary.id), matching);
    assert.equal(second.next_cursor, null);
  });
});
