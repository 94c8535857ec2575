/**
 * When a save of the ACL editor meets a 412 (another writer changed the ACL since it was
 * opened): what each side changed, and "merge", which re-applies this person's own edits on
 * top of the other writer's version. Pure (no DOM; unit-tested under Node). A three-way merge
 * against the version the edits were made on (`base`): a cell, a user's settings, a lock or a
 * user this person did not touch keeps the other writer's value; what they touched takes theirs
 * (here: "yours"). A user the other writer removed and this person edited stays removed
 * unless this person added it; the summary names such cells.
 */

import type { AclModel, AclUserModel, Permission } from './acl-matrix.ts';

type UserSettings = Omit<AclUserModel, 'permissions'>;

/** The ACL's own fields the editor sends besides the lists. */
export interface AclFields {
  name: string | null;
  okm_id: string | null;
  user_data: string;
}

export interface AclVersion {
  model: AclModel;
  fields: AclFields;
}

/** What one side changed, relative to the base. */
export interface AclChanges {
  locksAdded: string[];
  locksRemoved: string[];
  usersAdded: AclUserModel[];
  usersRemoved: number[];
  /** user id → the settings (pin hash, auth time, sounder …) it changed. */
  settings: Map<number, Partial<UserSettings>>;
  /** `${user_id} ${lock}` → the permission it set, for users and locks both sides had. */
  cells: Map<string, Permission>;
  fields: Partial<AclFields>;
}

const cellKey = (userId: number, lock: string) => `${userId} ${lock}`;

function usersById(model: AclModel): Map<number, AclUserModel> {
  return new Map(model.users.map((user) => [user.user_id, user]));
}

function permissionOf(model: AclModel, lockIndex: Map<string, number>, user: AclUserModel | undefined, lock: string): Permission | undefined {
  const index = lockIndex.get(lock);
  return user === undefined || index === undefined ? undefined : user.permissions[index];
}

const indexOfLocks = (model: AclModel) => new Map(model.locks.map((lock, index) => [lock, index]));

/** What `after` changed relative to `base`. */
export function aclChanges(base: AclVersion, after: AclVersion): AclChanges {
  const baseLocks = new Set(base.model.locks);
  const afterLocks = new Set(after.model.locks);
  const baseUsers = usersById(base.model);
  const afterUsers = usersById(after.model);
  const baseIndex = indexOfLocks(base.model);
  const afterIndex = indexOfLocks(after.model);
  const settings = new Map<number, Partial<UserSettings>>();
  const cells = new Map<string, Permission>();
  for (const user of after.model.users) {
    const before = baseUsers.get(user.user_id);
    if (before === undefined) continue;
    const changed: Partial<UserSettings> = {};
    for (const key of Object.keys(user) as (keyof AclUserModel)[]) {
      if (key !== 'permissions' && user[key] !== before[key]) (changed as Record<string, unknown>)[key] = user[key];
    }
    if (Object.keys(changed).length > 0) settings.set(user.user_id, changed);
    for (const lock of after.model.locks) {
      if (!baseLocks.has(lock)) continue;
      const value = permissionOf(after.model, afterIndex, user, lock)!;
      if (value !== permissionOf(base.model, baseIndex, before, lock)) cells.set(cellKey(user.user_id, lock), value);
    }
  }
  const fields: Partial<AclFields> = {};
  for (const key of ['name', 'okm_id', 'user_data'] as const) {
    if (after.fields[key] !== base.fields[key]) (fields as Record<string, unknown>)[key] = after.fields[key];
  }
  return {
    locksAdded: after.model.locks.filter((lock) => !baseLocks.has(lock)),
    locksRemoved: base.model.locks.filter((lock) => !afterLocks.has(lock)),
    usersAdded: after.model.users.filter((user) => !baseUsers.has(user.user_id)),
    usersRemoved: base.model.users.filter((user) => !afterUsers.has(user.user_id)).map((user) => user.user_id),
    settings,
    cells,
    fields,
  };
}

const plural = (count: number, noun: string) => `${count.toLocaleString()} ${noun}${count === 1 ? '' : 's'}`;
const listed = (items: readonly (string | number)[]) => (items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`);

/** The changes as lines for people ("Added users 5001, 5002"); empty: none. */
export function describeAclChanges(changes: AclChanges): string[] {
  const lines: string[] = [];
  if (changes.usersAdded.length > 0) lines.push(`Added ${changes.usersAdded.length === 1 ? 'user' : 'users'} ${listed(changes.usersAdded.map((user) => user.user_id))}`);
  if (changes.usersRemoved.length > 0) lines.push(`Removed ${changes.usersRemoved.length === 1 ? 'user' : 'users'} ${listed(changes.usersRemoved)}`);
  if (changes.locksAdded.length > 0) lines.push(`Added ${changes.locksAdded.length === 1 ? 'lock' : 'locks'} ${listed(changes.locksAdded)}`);
  if (changes.locksRemoved.length > 0) lines.push(`Removed ${changes.locksRemoved.length === 1 ? 'lock' : 'locks'} ${listed(changes.locksRemoved)}`);
  if (changes.cells.size > 0) lines.push(`Changed ${plural(changes.cells.size, 'permission')} (${listed([...changes.cells.keys()].map((key) => key.replace(' ', ' × ')))})`);
  if (changes.settings.size > 0) lines.push(`Changed the settings of ${changes.settings.size === 1 ? 'user' : 'users'} ${listed([...changes.settings.keys()])}`);
  if (changes.fields.name !== undefined) lines.push(changes.fields.name === null ? 'Removed the name' : `Renamed it “${changes.fields.name}”`);
  if (changes.fields.okm_id !== undefined) lines.push(changes.fields.okm_id === null ? 'Unlinked the OKM' : `Linked OKM ${changes.fields.okm_id}`);
  if (changes.fields.user_data !== undefined) lines.push('Changed the user data');
  return lines;
}

/** Your edits whose place the other writer removed: they cannot be applied, and the summary says so. */
export interface MergeResult extends AclVersion {
  dropped: string[];
}

/** `theirs` with `yours`' changes (made on `base`) applied on top. */
export function mergeAclEdits(base: AclVersion, yours: AclVersion, theirs: AclVersion): MergeResult {
  const mine = aclChanges(base, yours);
  const dropped: string[] = [];
  const removedLocks = new Set(mine.locksRemoved);
  const locks = [...new Set([...theirs.model.locks.filter((lock) => !removedLocks.has(lock)), ...mine.locksAdded])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const theirUsers = usersById(theirs.model);
  const yourUsers = usersById(yours.model);
  const theirIndex = indexOfLocks(theirs.model);
  const yourIndex = indexOfLocks(yours.model);
  const removedUsers = new Set(mine.usersRemoved);
  const addedByYou = new Set(mine.usersAdded.map((user) => user.user_id));
  const addedLocks = new Set(mine.locksAdded);

  const kept = theirs.model.users.filter((user) => !removedUsers.has(user.user_id) && !addedByYou.has(user.user_id));
  const order = [...kept, ...mine.usersAdded];
  const users = order.map((user): AclUserModel => {
    const theirUser = theirUsers.get(user.user_id);
    const yourUser = yourUsers.get(user.user_id);
    const settings = addedByYou.has(user.user_id) ? yourUser! : { ...theirUser!, ...mine.settings.get(user.user_id) };
    const permissions = locks.map((lock): Permission => {
      const yourCell = mine.cells.get(cellKey(user.user_id, lock));
      if (yourCell !== undefined) return yourCell;
      // A user or a lock you added carries your cells; the rest is theirs.
      if (addedByYou.has(user.user_id) || addedLocks.has(lock)) return permissionOf(yours.model, yourIndex, yourUser, lock) ?? permissionOf(theirs.model, theirIndex, theirUser, lock) ?? 0;
      return permissionOf(theirs.model, theirIndex, theirUser, lock) ?? 0;
    });
    const { permissions: _ignored, ...rest } = settings;
    return { ...rest, permissions };
  });

  const present = new Set(users.map((user) => user.user_id));
  const lockSet = new Set(locks);
  for (const [key] of mine.cells) {
    const [userId, lock] = [Number(key.slice(0, key.indexOf(' '))), key.slice(key.indexOf(' ') + 1)];
    if (!present.has(userId)) dropped.push(`user ${userId} (removed by the other writer)`);
    else if (!lockSet.has(lock)) dropped.push(`lock ${lock} (removed by the other writer)`);
  }
  for (const userId of mine.settings.keys()) if (!present.has(userId)) dropped.push(`user ${userId} (removed by the other writer)`);
  return { model: { locks, users }, fields: { ...theirs.fields, ...mine.fields }, dropped: [...new Set(dropped)] };
}
