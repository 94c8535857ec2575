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
  /** usersJson split into its users (userMembers), null when not in the canonical form: split once for the lists and the trail's diff. */
  splitUsers?: string[] | null;
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

const USER_ID_MEMBER = '"user_id":';

/**
 * The members of each user, in order, split from the canonical users JSON (canonicalUsersJson)
 * without parsing it: its users are flat objects of numbers, booleans and alphanumeric strings,
 * so `},{` occurs only between two of them, and user_id is each one's last member. Undefined
 * when the text is not in that form; the caller then parses it.
 */
function userMembers(usersJson: string): string[] | undefined {
  if (usersJson === '[]') return [];
  if (!usersJson.startsWith('[{') || !usersJson.endsWith('}]')) return undefined;
  const users = usersJson.slice(2, -2).split('},{');
  // No brace inside a user: a search of each is cheaper than splitting the whole text again.
  for (const user of users) if (user.includes('{') || user.includes('}')) return undefined;
  return users;
}

/** The state's users split (userMembers), split at most once. */
function membersOf(state: AclState): string[] | undefined {
  if (state.splitUsers === undefined) state.splitUsers = userMembers(state.usersJson) ?? null;
  return state.splitUsers ?? undefined;
}

/** The user id of a user's members (userMembers'), as text; undefined when user_id is not its last member (not the canonical form). */
function userIdOf(members: string): string | undefined {
  const at = members.lastIndexOf(USER_ID_MEMBER);
  const userId = at < 0 ? '' : members.slice(at + USER_ID_MEMBER.length);
  return userId !== '' && Number.isSafeInteger(Number(userId)) ? userId : undefined;
}

/** The user ids of the state's users, without parsing them where the canonical form allows. */
export function userIdsOf(state: AclState): number[] {
  const members = membersOf(state);
  if (members !== undefined) {
    const ids: number[] = [];
    for (const user of members) {
      const userId = userIdOf(user);
      if (userId === undefined) break;
      ids.push(Number(userId));
    }
    if (ids.length === members.length) return ids;
  }
  return (JSON.parse(state.usersJson) as AclUser[]).map((user) => user.user_id);
}

type UserPair = [userId: string, before: AclUser | undefined, after: AclUser | undefined];

/** Every user of either state, as it was and as it is (undefined: absent), parsed. */
function everyUser(before: AclState, after: AclState): UserPair[] {
  const usersBefore = usersOf(before);
  const usersAfter = usersOf(after);
  const pairs: UserPair[] = [];
  for (const [userId, user] of usersBefore) pairs.push([userId, user, usersAfter.get(userId)]);
  for (const [userId, user] of usersAfter) if (!usersBefore.has(userId)) pairs.push([userId, undefined, user]);
  return pairs;
}

/** Users' members by user id; undefined when one is not in the canonical form or an id repeats. */
function byUserId(users: readonly string[]): Map<string, string> | undefined {
  const texts = new Map<string, string>();
  for (const members of users) {
    const userId = userIdOf(members);
    if (userId === undefined || texts.has(userId)) return undefined;
    texts.set(userId, members);
  }
  return texts;
}

const parsedUser = (members: string | undefined) => (members === undefined ? undefined : (JSON.parse(`{${members}}`) as AclUser));

/**
 * The users an update may have changed, added or removed, each as it was and as it is
 * (undefined: absent). On the same locks, where both states have their canonical text, only
 * the users whose text differs, and only those parsed: compared place by place while the ids
 * line up (a PUT sends the users it read, in their order), else by id. Otherwise every user
 * (with other locks, the same permissions mean other access).
 */
function usersToCompare(before: AclState, after: AclState, sameLocks: boolean): UserPair[] {
  const membersBefore = sameLocks ? membersOf(before) : undefined;
  const membersAfter = membersBefore && membersOf(after);
  if (membersBefore === undefined || membersAfter === undefined) return everyUser(before, after);
  const pairs: UserPair[] = [];
  if (membersBefore.length === membersAfter.length) {
    let inPlace = true;
    for (let index = 0; index < membersBefore.length && inPlace; index += 1) {
      const was = membersBefore[index]!;
      const is = membersAfter[index]!;
      if (was === is) continue;
      const userId = userIdOf(was);
      if (userId !== undefined && userId === userIdOf(is)) pairs.push([userId, parsedUser(was), parsedUser(is)]);
      else inPlace = false;
    }
    if (inPlace) return pairs;
    pairs.length = 0;
  }
  const textsBefore = byUserId(membersBefore);
  const textsAfter = byUserId(membersAfter);
  if (textsBefore === undefined || textsAfter === undefined) return everyUser(before, after);
  for (const [userId, text] of textsBefore) {
    const kept = textsAfter.get(userId);
    if (kept !== text) pairs.push([userId, parsedUser(text), parsedUser(kept)]);
  }
  for (const [userId, text] of textsAfter) if (!textsBefore.has(userId)) pairs.push([userId, undefined, parsedUser(text)]);
  return pairs;
}

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
  const sameLocks = before.locks.length === after.locks.length && before.locks.every((lock, index) => lock === after.locks[index]);
  if (!sameLocks) {
    const beforeLocks = new Set(before.locks);
    const afterLocks = new Set(after.locks);
    const removedLocks = before.locks.filter((lock) => !afterLocks.has(lock));
    const addedLocks = after.locks.filter((lock) => !beforeLocks.has(lock));
    if (removedLocks.length > 0 || addedLocks.length > 0) {
      was.locks = removedLocks;
      is.locks = addedLocks;
    }
  }
  const wasUsers: Record<string, unknown> = {};
  const isUsers: Record<string, unknown> = {};
  const users = usersToCompare(before, after, sameLocks);
  for (const [userId, user, kept] of users) {
    if (user === undefined) {
      wasUsers[userId] = null;
      isUsers[userId] = auditUser(kept!, after.locks);
      continue;
    }
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
