import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { ACLS, aclUser, call, issueAclTokens, sampleAcl, type AclBodyFixture, type AclTokens } from './helpers.ts';

type MutableAcl = AclBodyFixture & Record<string, unknown>;
type Mutation = (acl: MutableAcl) => void;

/** A valid ACL with one thing wrong, and the message the 400 must carry. */
const CASES: [string, Mutation, string | RegExp][] = [
  ['an id that is not a UUID', (acl) => (acl.id = 'acl-1'), /^id: /],
  ['a missing customer', (acl) => delete (acl as Record<string, unknown>).customer, 'customer: required'],
  ['a missing users', (acl) => delete (acl as Record<string, unknown>).users, 'users: required'],
  ['a missing locks', (acl) => delete (acl as Record<string, unknown>).locks, 'locks: required'],
  ['an unknown top-level field', (acl) => (acl.colour = 'blue'), 'colour: unknown field'],
  ['an unknown user field', (acl) => ((acl.users[1] as unknown as Record<string, unknown>).nickname = 'x'), 'users[1].nickname: unknown field'],
  ['locks out of order', (acl) => (acl.locks = ['LOCK-B', 'LOCK-A', 'LOCK-C']), /^locks\[1\]: must come after locks\[0\] \(LOCK-B\)/],
  ['a lock twice', (acl) => (acl.locks = ['LOCK-A', 'LOCK-A', 'LOCK-C']), /^locks\[1\]: /],
  ['locks ordered by case-insensitive comparison, not byte order', (acl) => (acl.locks = ['a', 'B', 'c']), /^locks\[1\]: /],
  ['a lock serial number with a space', (acl) => (acl.locks[2] = 'LOCK 2'), /^locks\[2\]: /],
  ['an empty lock serial number', (acl) => (acl.locks[0] = ''), /^locks\[0\]: /],
  ['a user_id of 10 digits', (acl) => (acl.users[0]!.user_id = 1_000_000_000), /^users\[0\]\.user_id: /],
  ['a negative user_id', (acl) => (acl.users[0]!.user_id = -1), /^users\[0\]\.user_id: /],
  ['a fractional user_id', (acl) => (acl.users[0]!.user_id = 1.5), /^users\[0\]\.user_id: /],
  ['a user_id given as a string', (acl) => ((acl.users[0] as unknown as Record<string, unknown>).user_id = '7'), /^users\[0\]\.user_id: /],
  ['a duplicate user_id', (acl) => (acl.users[1]!.user_id = acl.users[0]!.user_id), 'users[1].user_id: 100 is also the user_id of users[0]'],
  ['a pin_hash with a symbol', (acl) => (acl.users[1]!.pin_hash = 'abc$'), /^users\[1\]\.pin_hash: /],
  ['an empty pin_hash', (acl) => (acl.users[1]!.pin_hash = ''), /^users\[1\]\.pin_hash: /],
  ['a pin_hash of 129 characters', (acl) => (acl.users[1]!.pin_hash = 'a'.repeat(129)), /^users\[1\]\.pin_hash: /],
  ['an auth_time of 2', (acl) => (acl.users[0]!.auth_time = 2), 'users[0].auth_time: must be one of 1, 4, 8, 12, 24'],
  ['a sounder that is not a boolean', (acl) => ((acl.users[0] as unknown as Record<string, unknown>).sounder = 1), /^users\[0\]\.sounder: /],
  ['a sounder_delay of 121', (acl) => (acl.users[0]!.sounder_delay = 121), /^users\[0\]\.sounder_delay: /],
  ['a negative sounder_delay', (acl) => (acl.users[0]!.sounder_delay = -1), /^users\[0\]\.sounder_delay: /],
  ['a sounder_duration of 256', (acl) => (acl.users[0]!.sounder_duration = 256), /^users\[0\]\.sounder_duration: /],
  ['a sounder_volume of 3', (acl) => (acl.users[0]!.sounder_volume = 3), 'users[0].sounder_volume: must be one of 0, 1, 2'],
  ['a permission of 2', (acl) => (acl.users[1]!.permissions[2] = 2), 'users[1].permissions[2]: must be one of 0, 1, 17'],
  ['one permission too few', (acl) => acl.users[1]!.permissions.pop(), 'users[1].permissions: expected 3 values, one per lock, got 2'],
  ['one permission too many', (acl) => acl.users[0]!.permissions.push(0), 'users[0].permissions: expected 3 values, one per lock, got 4'],
  ['user_data that is not an object', (acl) => (acl.user_data = [1, 2]), /^user_data: /],
  ['user_data of null', (acl) => (acl.user_data = null), /^user_data: /],
  ['user_data over 64 KiB', (acl) => (acl.user_data = { text: 'x'.repeat(65_536) }), 'user_data: must be at most 65536 bytes of JSON'],
  ['an okm_id that is not a serial number', (acl) => (acl.okm_id = 'OKM 1'), /^okm_id: /],
  ['a customer that is not a name', (acl) => (acl.customer = 'ac me'), /^customer: /],
];

forEachDatabase('ACL validation', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind, { ACL_MAX_USERS: '5', ACL_MAX_LOCKS: '4' });
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  for (const [name, mutate, message] of CASES) {
    test(`when an ACL has ${name}, POST and PUT are 400 naming the field, and nothing is stored`, async () => {
      const stored = sampleAcl('acme');
      await call(t, 'POST', ACLS, { token: tokens.acme, payload: stored });
      const posted = sampleAcl('acme');
      mutate(posted as MutableAcl);
      const replacement = { ...sampleAcl('acme'), id: stored.id };
      mutate(replacement as MutableAcl);

      const responses = [
        await call(t, 'POST', ACLS, { token: tokens.acme, payload: posted }),
        await call(t, 'PUT', `${ACLS}/${stored.id}`, { token: tokens.acme, payload: replacement }),
      ];

      for (const response of responses) {
        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.json().error_code, 'BAD_REQUEST');
        if (typeof message === 'string') assert.equal(response.json().error_msg, message);
        else assert.match(response.json().error_msg, message);
      }
      assert.deepEqual((await call(t, 'GET', `${ACLS}/${stored.id}`, { token: tokens.acme })).json().data, stored);
    });
  }

  test('an ACL at the caps (settings ACL_MAX_USERS, ACL_MAX_LOCKS) is accepted', async () => {
    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: sampleAcl('acme', { users: 5, locks: 4 }) });

    assert.equal(response.statusCode, 201);
  });

  test('one user over ACL_MAX_USERS is a 400 naming users', async () => {
    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: sampleAcl('acme', { users: 6, locks: 1 }) });

    assert.deepEqual(response.json(), { error_code: 'BAD_REQUEST', error_msg: 'users: must NOT have more than 5 items' });
  });

  test('one lock over ACL_MAX_LOCKS is a 400 naming locks (or the first user\'s permissions)', async () => {
    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: sampleAcl('acme', { users: 1, locks: 5 }) });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^(locks|users\[0\]\.permissions): must NOT have more than 4 items$/);
  });

  test('an ACL with no users and no locks is valid', async () => {
    const acl = { ...sampleAcl('acme'), users: [], locks: [] };

    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: acl });

    assert.equal(response.statusCode, 201);
    assert.deepEqual(response.json().data, acl);
  });

  test('every allowed value of auth_time, sounder_volume and permissions is accepted', async () => {
    const locks = ['A', 'B', 'C'];
    const users = [1, 4, 8, 12, 24].map((authTime, index) => ({
      ...aclUser(index, [0, 1, 17]),
      auth_time: authTime,
      sounder_volume: index % 3,
      sounder: index % 2 === 0,
      sounder_delay: index === 0 ? 120 : 0,
      sounder_duration: index === 0 ? 255 : 0,
      user_id: index === 0 ? 999_999_999 : index,
    }));

    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload: { ...sampleAcl('acme'), users, locks } });

    assert.equal(response.statusCode, 201, response.body);
  });

  test('a body that is not JSON, or not an object, is a 400', async () => {
    for (const payload of ['{"customer":', '[]', '"acl"', 'null']) {
      const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload, headers: { 'content-type': 'application/json' } });

      assert.equal(response.statusCode, 400, payload);
    }
  });

  test('a body larger than the caps allow is a 413, not a 5xx', async () => {
    const payload = JSON.stringify({ ...sampleAcl('acme'), user_data: { text: 'x'.repeat(1_000_000) } });

    const response = await call(t, 'POST', ACLS, { token: tokens.acme, payload, headers: { 'content-type': 'application/json' } });

    assert.equal(response.statusCode, 413);
  });
});
