import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  addUser,
  countsAfterCellChange,
  insertLock,
  matchingLocks,
  matchingUsers,
  nextPermission,
  pageOfIndex,
  permissionCounts,
  placeOfField,
  removeLock,
  removeUser,
  setPermission,
  sliceOf,
  type AclModel,
  type Permission,
} from '../../console/src/acl-matrix.ts';

const permission = fc.constantFrom<Permission>(0, 1, 17);
const serial = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/);

/** A valid ACL: locks strictly ascending, one permission per lock for each user. */
const aclModel = fc
  .uniqueArray(serial, { maxLength: 12 })
  .chain((serials) => {
    const locks = serials.sort((a, b) => (a < b ? -1 : 1));
    return fc.record({
      locks: fc.constant(locks),
      users: fc.uniqueArray(fc.integer({ min: 0, max: 999_999_999 }), { maxLength: 8 }).chain((ids) =>
        fc.tuple(...ids.map((id) => fc.array(permission, { minLength: locks.length, maxLength: locks.length }).map((permissions) => ({ id, permissions })))),
      ),
    });
  })
  .map(({ locks, users }): AclModel => {
    let model: AclModel = { locks, users: [] };
    for (const { id, permissions } of users) {
      model = addUser(model, id, `pin${id}`);
      permissions.forEach((value, lock) => (model = setPermission(model, model.users.length - 1, lock, value)));
    }
    return model;
  });

const strictlyAscending = (locks: string[]) => locks.every((lock, index) => index === 0 || locks[index - 1]! < lock);
const isValid = (model: AclModel) => strictlyAscending(model.locks) && model.users.every((user) => user.permissions.length === model.locks.length);

test('a click cycles a cell through no access, access and dual authentication, back where it began after three', () => {
  assert.deepEqual([nextPermission(0), nextPermission(1), nextPermission(17)], [1, 17, 0]);
  fc.assert(fc.property(permission, (value) => nextPermission(nextPermission(nextPermission(value))) === value));
});

test('adding a lock keeps the locks strictly ascending and gives every user no access to it', () => {
  fc.assert(
    fc.property(aclModel, serial, (model, added) => {
      const { model: after, index, added: isNew } = insertLock(model, added);
      assert.ok(isValid(after));
      assert.equal(after.locks[index], added);
      assert.equal(after.locks.length, model.locks.length + (isNew ? 1 : 0));
      if (isNew) assert.ok(after.users.every((user) => user.permissions[index] === 0));
    }),
  );
});

test('a lock already in the list is not added twice, and the model is unchanged', () => {
  const model = insertLock({ locks: ['A', 'C'], users: [] }, 'B').model;
  const again = insertLock(model, 'B');
  assert.equal(again.added, false);
  assert.equal(again.index, 1);
  assert.equal(again.model, model);
});

test('removing the lock just added gives back the ACL as it was', () => {
  fc.assert(
    fc.property(aclModel, serial, (model, added) => {
      const insertion = insertLock(model, added);
      fc.pre(insertion.added);
      assert.deepEqual(removeLock(insertion.model, insertion.index), model);
    }),
  );
});

test('a permission change copies only the changed user: the others are the same objects', () => {
  let model: AclModel = { locks: ['L1', 'L2'], users: [] };
  model = addUser(addUser(model, 1, 'a'), 2, 'b');
  const changed = setPermission(model, 1, 0, 17);
  assert.equal(changed.users[0], model.users[0]);
  assert.deepEqual(changed.users[1]!.permissions, [17, 0]);
  assert.deepEqual(model.users[1]!.permissions, [0, 0]);
});

test('removing a user leaves the others in their order', () => {
  let model: AclModel = { locks: [], users: [] };
  for (const id of [5, 6, 7]) model = addUser(model, id, 'p');
  assert.deepEqual(removeUser(model, 1).users.map((user) => user.user_id), [5, 7]);
});

test('a page of rows or columns never holds more than asked for, and the pages cover every index once', () => {
  fc.assert(
    fc.property(fc.nat(500), fc.integer({ min: 1, max: 60 }), fc.integer({ min: -3, max: 40 }), (count, perPage, page) => {
      const indices = Array.from({ length: count }, (_, index) => index);
      const slice = sliceOf(indices, page, perPage);
      assert.ok(slice.shown.length <= perPage);
      assert.ok(slice.page >= 1 && slice.page <= slice.pages);
      const all = Array.from({ length: slice.pages }, (_, index) => sliceOf(indices, index + 1, perPage).shown).flat();
      assert.deepEqual(all, indices);
    }),
  );
});

test('the page of an index is the one that shows it, and null when the filter hides it', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.nat(300), { maxLength: 100 }), fc.nat(300), fc.integer({ min: 1, max: 30 }), (indices, index, perPage) => {
      const page = pageOfIndex(indices, index, perPage);
      if (!indices.includes(index)) return page === null;
      return sliceOf(indices, page!, perPage).shown.includes(index);
    }),
  );
});

test('users are found by the beginning of their id, locks by any part of their serial number, any case', () => {
  let model: AclModel = { locks: ['DOOR-1', 'door-2', 'GATE-1'], users: [] };
  for (const id of [100, 1001, 200]) model = addUser(model, id, 'p');
  assert.deepEqual(matchingUsers(model, '100'), [0, 1]);
  assert.deepEqual(matchingUsers(model, ' '), [0, 1, 2]);
  assert.deepEqual(matchingLocks(model, 'Door'), [0, 1]);
  assert.deepEqual(matchingLocks(model, '-1'), [0, 2]);
});

test('an API message\'s field is placed at its user, lock cell, lock column or form field', () => {
  assert.deepEqual(placeOfField('users[3].permissions[5]'), { userIndex: 3, lockIndex: 5, member: 'permissions' });
  assert.deepEqual(placeOfField('users[3].permissions'), { userIndex: 3, lockIndex: null, member: 'permissions' });
  assert.deepEqual(placeOfField('users[0].user_id'), { userIndex: 0, lockIndex: null, member: 'user_id' });
  assert.deepEqual(placeOfField('users[2]'), { userIndex: 2, lockIndex: null, member: null });
  assert.deepEqual(placeOfField('locks[1]'), { userIndex: null, lockIndex: 1, member: null });
  assert.deepEqual(placeOfField('okm_id'), { userIndex: null, lockIndex: null, member: 'okm_id' });
  assert.equal(placeOfField(null), null);
});

test('the counts say how many cells give access or dual authentication and how many users may open something', () => {
  let model: AclModel = { locks: ['A', 'B'], users: [] };
  for (const id of [1, 2, 3]) model = addUser(model, id, 'p');
  model = setPermission(setPermission(setPermission(model, 0, 0, 1), 0, 1, 17), 2, 1, 1);
  assert.deepEqual(permissionCounts(model), { access: 2, dual: 1, usersWithAccess: 2 });
});

test('the counts after one cell changes equal the counts of the whole changed ACL', () => {
  fc.assert(
    fc.property(aclModel, fc.nat(), fc.nat(), permission, (model, userPick, lockPick, value) => {
      fc.pre(model.users.length > 0 && model.locks.length > 0);
      const userIndex = userPick % model.users.length;
      const lockIndex = lockPick % model.locks.length;
      const changed = setPermission(model, userIndex, lockIndex, value);
      assert.deepEqual(countsAfterCellChange(permissionCounts(model), model.users[userIndex]!, lockIndex, value), permissionCounts(changed));
    }),
  );
});
