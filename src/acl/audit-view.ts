import type { Change } from '../audit/trail.ts';
import type { AclUser } from './schemas.ts';

/** An ACL as the audit trail records it: what it grants, and to whom, keyed so that a change reads per user and lock. */
export interface AclState {
  customer: string;
  name: string | null;
  okm_id: string | null;
  locks: readonly string[];
  usersJson: string;
  /** The users parsed already (an update's body), which spares parsing usersJson. */
  users?: readonly AclUser[];
  userDataJson: string | null;
}

type AuditUser = Omit<AclUser, 'permissions' | 'user_id'> & { access: Record<string, number> };

/** A user's settings, and the permission (0 no access, 1 access, 17 dual authentication) it holds on each lock where it holds one. */
function auditUser(user: AclUser, locks: readonly string[]): AuditUser {
  const { permissions, user_id: _userId, ...settings } = user;
  const access: Record<string, number> = {};
  permissions.forEach((permission, index) => {
    if (permission !== 0) access[locks[index]!] = permission;
  });
  return { ...settings, access };
}

const usersOf = (state: AclState) => new Map((state.users ?? (JSON.parse(state.usersJson) as AclUser[])).map((user) => [String(user.user_id), user]));

/** The user's settings and permissions are those it had, on the same locks: nothing to record, found without building its access. */
function unchangedUser(before: AclUser, after: AclUser): boolean {
  if (before.permissions.length !== after.permissions.length) return false;
  for (let index = 0; index < before.permissions.length; index += 1) if (before.permissions[index] !== after.permissions[index]) return false;
  return (
    before.pin_hash === after.pin_hash &&
    before.auth_time === after.auth_time &&
    before.sounder === after.sounder &&
    before.sounder_delay === after.sounder_delay &&
    before.sounder_duration === after.sounder_duration &&
    before.sounder_volume === after.sounder_volume
  );
}

/** The whole ACL: what a creation records after, and a deletion before. */
function wholeAcl(state: AclState): Record<string, unknown> {
  const users: Record<string, AuditUser> = {};
  for (const [userId, user] of usersOf(state)) users[userId] = auditUser(user, state.locks);
  return {
    name: state.name,
    okm_id: state.okm_id,
    locks: state.locks,
    users,
    ...(state.userDataJson === null ? {} : { user_data: JSON.parse(state.userDataJson) as unknown }),
  };
}

/**
 * What an update changed, and only that, before and after: the name, the OKM, the locks added
 * and removed, each user added or removed whole, and of each user kept the settings and the
 * permissions on each lock that differ ("user 1234: lock L7 0 → 1"). An ACL of thousands of
 * users and locks changed in one cell records that cell, not the ACL twice.
 */
function aclDifference(before: AclState, after: AclState): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const was: Record<string, unknown> = {};
  const is: Record<string, unknown> = {};
  for (const member of ['name', 'okm_id'] as const) {
    if (before[member] !== after[member]) {
      was[member] = before[member];
      is[member] = after[member];
    }
  }
  const beforeLocks = new Set(before.locks);
  const afterLocks = new Set(after.locks);
  const sameLocks = before.locks.length === after.locks.length && before.locks.every((lock, index) => lock === after.locks[index]);
  const removedLocks = before.locks.filter((lock) => !afterLocks.has(lock));
  const addedLocks = after.locks.filter((lock) => !beforeLocks.has(lock));
  if (removedLocks.length > 0 || addedLocks.length > 0) {
    was.locks = removedLocks;
    is.locks = addedLocks;
  }
  const usersBefore = usersOf(before);
  const usersAfter = usersOf(after);
  const wasUsers: Record<string, unknown> = {};
  const isUsers: Record<string, unknown> = {};
  for (const [userId, user] of usersBefore) {
    const kept = usersAfter.get(userId);
    if (kept === undefined) {
      wasUsers[userId] = auditUser(user, before.locks);
      isUsers[userId] = null;
      continue;
    }
    if (sameLocks && unchangedUser(user, kept)) continue;
    const [changedBefore, changedAfter] = userDifference(auditUser(user, before.locks), auditUser(kept, after.locks));
    if (changedBefore !== undefined) {
      wasUsers[userId] = changedBefore;
      isUsers[userId] = changedAfter;
    }
  }
  for (const [userId, user] of usersAfter) {
    if (usersBefore.has(userId)) continue;
    wasUsers[userId] = null;
    isUsers[userId] = auditUser(user, after.locks);
  }
  if (Object.keys(wasUsers).length > 0) {
    was.users = wasUsers;
    is.users = isUsers;
  }
  if (before.userDataJson !== after.userDataJson) {
    was.user_data = before.userDataJson === null ? null : (JSON.parse(before.userDataJson) as unknown);
    is.user_data = after.userDataJson === null ? null : (JSON.parse(after.userDataJson) as unknown);
  }
  return { before: was, after: is };
}

/** The settings and lock permissions of one user that differ; undefined when none does. A lock without a permission reads 0. */
function userDifference(before: AuditUser, after: AuditUser): [Record<string, unknown> | undefined, Record<string, unknown> | undefined] {
  const was: Record<string, unknown> = {};
  const is: Record<string, unknown> = {};
  for (const member of Object.keys(after) as (keyof AuditUser)[]) {
    if (member === 'access' || before[member] === after[member]) continue;
    was[member] = before[member];
    is[member] = after[member];
  }
  const wasAccess: Record<string, number> = {};
  const isAccess: Record<string, number> = {};
  for (const lock of new Set([...Object.keys(before.access), ...Object.keys(after.access)])) {
    const from = before.access[lock] ?? 0;
    const to = after.access[lock] ?? 0;
    if (from === to) continue;
    wasAccess[lock] = from;
    isAccess[lock] = to;
  }
  if (Object.keys(wasAccess).length > 0) {
    was.access = wasAccess;
    is.access = isAccess;
  }
  return Object.keys(was).length === 0 ? [undefined, undefined] : [was, is];
}

/** The audit trail's change for an ACL created (before undefined), replaced, or deleted (after undefined). */
export function aclChange(id: string, before: AclState | undefined, after: AclState | undefined): Change {
  const customer = (after ?? before)!.customer;
  const entity = { type: 'acl' as const, id };
  if (before === undefined) return { action: 'acl.created', customer, entity, after: wholeAcl(after!) };
  if (after === undefined) return { action: 'acl.deleted', customer, entity, before: wholeAcl(before) };
  return { action: 'acl.updated', customer, entity, ...aclDifference(before, after) };
}
