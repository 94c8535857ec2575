import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { aclChange, userIdsOf, type AclState } from '../../src/acl/audit-view.ts';
import { canonicalUsersJson } from '../../src/acl/model.ts';
import type { AclUser } from '../../src/acl/schemas.ts';
import { permissionsOn, userSettings } from './arbitraries.ts';

const LOCK_POOL = ['L1', 'L2', 'L3', 'L4', 'L5'];

const settings = userSettings;

const userOn = (count: number, userId: fc.Arbitrary<number>) => fc.record({ user_id: userId, ...settings, permissions: permissionsOn(count) }) as fc.Arbitrary<AclUser>;

/** What an edit does to one user: keeps it, changes one setting or permission, or drops it. */
type Edit = { kind: 'keep' } | { kind: 'drop' } | { kind: 'setting'; member: keyof typeof settings; value: unknown } | { kind: 'permission'; index: number; value: number };

const anEdit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'keep' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'drop' as const }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(...(Object.keys(settings) as (keyof typeof settings)[])).chain((member) => settings[member].map((value) => ({ kind: 'setting' as const, member, value }))),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('permission' as const), index: fc.nat(), value: fc.constantFrom(0, 1, 17) }) },
);

/** An ACL's users before an update and after it: edited in place, some dropped, some added, maybe reordered, maybe on other locks. */
const anUpdate = fc
  .record({ lockCount: fc.integer({ min: 0, max: 3 }), otherLocks: fc.boolean() })
  .chain(({ lockCount, otherLocks }) => {
    const locksBefore = LOCK_POOL.slice(0, lockCount);
    const locksAfter = otherLocks ? LOCK_POOL.slice(1, 1 + lockCount) : locksBefore;
    return fc.record({
      locksBefore: fc.constant(locksBefore),
      locksAfter: fc.constant(locksAfter),
      before: fc.uniqueArray(userOn(lockCount, fc.integer({ min: 0, max: 40 })), { selector: (user) => user.user_id, maxLength: 8 }),
      edits: fc.array(anEdit, { minLength: 8, maxLength: 8 }),
      added: fc.uniqueArray(userOn(lockCount, fc.integer({ min: 41, max: 60 })), { selector: (user) => user.user_id, maxLength: 3 }),
      order: fc.constantFrom('kept', 'reversed', 'added first'),
    });
  })
  .map(({ locksBefore, locksAfter, before, edits, added, order }) => {
    const edited: AclUser[] = [];
    before.forEach((user, index) => {
      const edit = edits[index]!;
      if (edit.kind === 'drop') return;
      if (edit.kind === 'setting') edited.push({ ...user, [edit.member]: edit.value });
      else if (edit.kind === 'permission' && user.permissions.length > 0) {
        const permissions = [...user.permissions];
        permissions[edit.index % permissions.length] = edit.value as AclUser['permissions'][number];
        edited.push({ ...user, permissions });
      } else edited.push(user);
    });
    const after = order === 'reversed' ? [...edited, ...added].reverse() : order === 'added first' ? [...added, ...edited] : [...edited, ...added];
    return { locksBefore, locksAfter, before, after };
  });

const stateOf = (users: AclUser[], locks: string[], asStored: boolean): AclState => ({
  customer: 'acme',
  name: null,
  okm_id: null,
  locks,
  // As stored: the canonical text alone, which the diff reads without parsing where it can; else the users parsed, no text.
  usersJson: asStored ? canonicalUsersJson(users) : '',
  ...(asStored ? {} : { users }),
  userDataJson: null,
});

test('an update recorded from the stored users text is the update recorded from the users parsed, for any edits, additions, removals, orders and locks', () => {
  fc.assert(
    fc.property(anUpdate, ({ locksBefore, locksAfter, before, after }) => {
      const fromText = aclChange('acl-1', stateOf(before, locksBefore, true), stateOf(after, locksAfter, true));
      const fromParsed = aclChange('acl-1', stateOf(before, locksBefore, false), stateOf(after, locksAfter, false));
      assert.deepEqual(fromText, fromParsed);
    }),
    { numRuns: 2_000 },
  );
});

test('the user ids read from the stored users text are those of the users, in order', () => {
  fc.assert(
    fc.property(anUpdate, ({ before }) => {
      assert.deepEqual(userIdsOf(stateOf(before, [], true)), before.map((user) => user.user_id));
    }),
    { numRuns: 500 },
  );
});

test('a users text not in the canonical form is read by parsing it: same ids, same change', () => {
  const users: AclUser[] = [{ user_id: 7, pin_hash: 'ab', auth_time: 8, sounder: false, sounder_delay: 0, sounder_duration: 0, sounder_volume: 2, permissions: [1] }];
  const reordered = JSON.stringify(users.map(({ user_id, ...rest }) => ({ user_id, ...rest })));
  const changed = [{ ...users[0]!, permissions: [0] }] as AclUser[];

  assert.deepEqual(userIdsOf({ ...stateOf(users, ['L1'], true), usersJson: reordered }), [7]);
  assert.deepEqual(aclChange('acl-1', { ...stateOf(users, ['L1'], true), usersJson: reordered }, stateOf(changed, ['L1'], true)).after, { users: { 7: { access: { L1: 0 } } } });
});
