import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addUser, insertLock, removeUser, setPermission, type AclModel } from '../../console/src/acl-matrix.ts';
import { aclChanges, describeAclChanges, mergeAclEdits, type AclFields, type AclVersion } from '../../console/src/acl-merge.ts';

const FIELDS: AclFields = { name: 'Store 412', okm_id: null, user_data: '' };
const version = (model: AclModel, fields = FIELDS): AclVersion => ({ model, fields });

function baseModel(): AclModel {
  let model: AclModel = { locks: [], users: [] };
  for (const lock of ['L-1', 'L-2']) model = insertLock(model, lock).model;
  model = addUser(model, 100, 'aa');
  model = addUser(model, 200, 'bb');
  return model;
}

test('merge keeps the user the other writer added and re-applies the cells this person changed', () => {
  const base = baseModel();
  const theirs = addUser(base, 300, 'cc');
  const yours = setPermission(base, 0, 1, 17);

  const merged = mergeAclEdits(version(base), version(yours), version(theirs));

  assert.deepEqual(merged.model.users.map((user) => user.user_id), [100, 200, 300]);
  assert.deepEqual(merged.model.users[0]!.permissions, [0, 17]);
  assert.deepEqual(merged.dropped, []);
});

test('a cell both changed takes this person\'s value; one only the other writer changed keeps theirs', () => {
  const base = baseModel();
  const theirs = setPermission(setPermission(base, 0, 1, 1), 1, 0, 1);
  const yours = setPermission(base, 0, 1, 17);

  const merged = mergeAclEdits(version(base), version(yours), version(theirs));

  assert.deepEqual(merged.model.users.map((user) => user.permissions), [[0, 17], [1, 0]]);
});

test('locks added on both sides land in order; a user this person added gets its cells, and 0 on the other writer\'s new lock', () => {
  const base = baseModel();
  const theirs = insertLock(base, 'L-0').model;
  let yours = insertLock(base, 'L-3').model;
  yours = addUser(yours, 400, 'dd');
  yours = setPermission(yours, 2, 2, 1);

  const merged = mergeAclEdits(version(base), version(yours), version(theirs));

  assert.deepEqual(merged.model.locks, ['L-0', 'L-1', 'L-2', 'L-3']);
  assert.deepEqual(merged.model.users.find((user) => user.user_id === 400)!.permissions, [0, 0, 0, 1]);
});

test('an edit of a user the other writer removed is dropped and named; removals on this side stay removed', () => {
  const base = baseModel();
  const theirs = removeUser(base, 1);
  const yours = removeUser(setPermission(base, 1, 0, 1), 0);

  const merged = mergeAclEdits(version(base), version(yours), version(theirs));

  assert.deepEqual(merged.model.users, []);
  assert.deepEqual(merged.dropped, ['user 200 (removed by the other writer)']);
});

test('fields: this person\'s changed fields win, the others are theirs; changes are described for people', () => {
  const base = baseModel();
  const merged = mergeAclEdits(version(base), version(base, { ...FIELDS, name: 'Mine' }), version(base, { ...FIELDS, okm_id: 'OKM-1' }));

  assert.deepEqual(merged.fields, { name: 'Mine', okm_id: 'OKM-1', user_data: '' });
  assert.deepEqual(describeAclChanges(aclChanges(version(base), version(addUser(setPermission(base, 0, 0, 1), 300, 'x')))), ['Added user 300', 'Changed 1 permission (100 × L-1)']);
});
