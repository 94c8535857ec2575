/**
 * The ACL editor's model, pure (no DOM; unit-tested under Node): an ACL's users × locks
 * matrix, the edits a person makes to it, and the window of it a page shows. Edits return a
 * new model and copy only what they change (one user's permissions, the lists), so a 5 000 ×
 * 1 000 ACL is edited without copying its five million permissions.
 */

import type { components } from '../../clients/typescript/keyfleet-openapi.ts';

/** A user as the API's ACL schema has it (the generated client types). */
export type AclUserModel = components['schemas']['AclUser'];
export type Permission = AclUserModel['permissions'][number];

export interface AclModel {
  locks: string[];
  users: AclUserModel[];
}

export const AUTH_TIMES = [1, 4, 8, 12, 24] as const;
export const SOUNDER_VOLUMES = [
  { value: 0, label: 'Off' },
  { value: 1, label: 'Low' },
  { value: 2, label: 'Normal' },
] as const;

/**
 * What the PIN hash field is, for the person at the desk. The original requirements ask for the PIN's hash "in
 * the form an OKM expects" (contract §0.6) and neither they nor the contract define that form, so the
 * console cannot compute it from a PIN; it says what to enter instead.
 */
export const PIN_HASH_EXPLAINED =
  'A hash of the user\'s PIN in the form the OKM checks, not the PIN itself. keyfleet cannot compute it: copy it from the tool that enrols users on your OKMs. 1 to 128 letters and digits.';

/** What each value means, as the matrix's legend and each cell's label say it. */
export const PERMISSION_TEXT: Record<Permission, { symbol: string; label: string }> = {
  0: { symbol: '·', label: 'no access' },
  1: { symbol: '✓', label: 'access' },
  17: { symbol: '✓✓', label: 'dual authentication' },
};

/** A click on a cell: no access → access → dual authentication → no access. */
export function nextPermission(value: Permission): Permission {
  return value === 0 ? 1 : value === 1 ? 17 : 0;
}

export function setPermission(model: AclModel, userIndex: number, lockIndex: number, value: Permission): AclModel {
  const users = model.users.slice();
  const user = users[userIndex]!;
  const permissions = user.permissions.slice();
  permissions[lockIndex] = value;
  users[userIndex] = { ...user, permissions };
  return { ...model, users };
}

/** Where `serial` belongs in locks kept strictly ascending (byte order, as the API wants them). */
function lockPosition(locks: readonly string[], serial: string): number {
  let low = 0;
  let high = locks.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (locks[middle]! < serial) low = middle + 1;
    else high = middle;
  }
  return low;
}

export interface LockInsertion {
  model: AclModel;
  index: number;
  /** false: the lock was in the list already (at index). */
  added: boolean;
}

/** Adds a lock at its place in the order, with no access for every user; a lock already there is left as it is. */
export function insertLock(model: AclModel, serial: string): LockInsertion {
  const index = lockPosition(model.locks, serial);
  if (model.locks[index] === serial) return { model, index, added: false };
  const locks = model.locks.slice();
  locks.splice(index, 0, serial);
  const users = model.users.map((user) => {
    const permissions = user.permissions.slice();
    permissions.splice(index, 0, 0);
    return { ...user, permissions };
  });
  return { model: { locks, users }, index, added: true };
}

export function removeLock(model: AclModel, lockIndex: number): AclModel {
  return {
    locks: model.locks.filter((_, index) => index !== lockIndex),
    users: model.users.map((user) => ({ ...user, permissions: user.permissions.filter((_, index) => index !== lockIndex) })),
  };
}

/** A new user with no access to any lock, at the end of the list. */
export function addUser(model: AclModel, userId: number, pinHash: string): AclModel {
  const user: AclUserModel = {
    user_id: userId,
    pin_hash: pinHash,
    auth_time: 8,
    sounder: false,
    sounder_delay: 0,
    sounder_duration: 0,
    sounder_volume: 2,
    permissions: model.locks.map(() => 0),
  };
  return { ...model, users: [...model.users, user] };
}

export function removeUser(model: AclModel, userIndex: number): AclModel {
  return { ...model, users: model.users.filter((_, index) => index !== userIndex) };
}

export function updateUser(model: AclModel, userIndex: number, change: Partial<Omit<AclUserModel, 'permissions'>>): AclModel {
  const users = model.users.slice();
  users[userIndex] = { ...users[userIndex]!, ...change };
  return { ...model, users };
}

/** The indices of the users whose id begins with `prefix` (all when it is blank). */
export function matchingUsers(model: AclModel, prefix: string): number[] {
  const wanted = prefix.trim();
  const indices: number[] = [];
  model.users.forEach((user, index) => {
    if (wanted === '' || String(user.user_id).startsWith(wanted)) indices.push(index);
  });
  return indices;
}

/** The indices of the locks whose serial number contains `text`, ignoring case (all when it is blank). */
export function matchingLocks(model: AclModel, text: string): number[] {
  const wanted = text.trim().toLowerCase();
  const indices: number[] = [];
  model.locks.forEach((serial, index) => {
    if (wanted === '' || serial.toLowerCase().includes(wanted)) indices.push(index);
  });
  return indices;
}

export interface Slice {
  /** The indices shown on this page. */
  shown: number[];
  /** 1-based, clamped to the pages there are. */
  page: number;
  pages: number;
  /** 1-based position of the first shown among all, 0 when none. */
  first: number;
  total: number;
}

/** One page of `indices`, `perPage` at a time: what the matrix renders, so never more than perPage rows or columns. */
export function sliceOf(indices: readonly number[], page: number, perPage: number): Slice {
  const pages = Math.max(1, Math.ceil(indices.length / perPage));
  const current = Math.min(Math.max(1, Math.floor(page) || 1), pages);
  const start = (current - 1) * perPage;
  const shown = indices.slice(start, start + perPage);
  return { shown, page: current, pages, first: shown.length === 0 ? 0 : start + 1, total: indices.length };
}

/** The page of `indices` on which `index` is shown, or null when the filter hides it. */
export function pageOfIndex(indices: readonly number[], index: number, perPage: number): number | null {
  const position = indices.indexOf(index);
  return position === -1 ? null : Math.floor(position / perPage) + 1;
}

/** Where an API message points in the ACL: "users[3].permissions[5]" → user 3, lock 5, member "permissions". */
export interface FieldPlace {
  userIndex: number | null;
  lockIndex: number | null;
  /** The user's member ("pin_hash"), or the ACL's own field ("okm_id", "customer"). */
  member: string | null;
}

const USER_FIELD = /^users\[(\d+)\](?:\.([a-z_]+)(?:\[(\d+)\])?)?$/;
const LOCK_FIELD = /^locks\[(\d+)\]$/;

export function placeOfField(field: string | null): FieldPlace | null {
  if (field === null) return null;
  const user = USER_FIELD.exec(field);
  if (user) {
    const [, userIndex, member, lockIndex] = user;
    return { userIndex: Number(userIndex), lockIndex: lockIndex === undefined ? null : Number(lockIndex), member: member ?? null };
  }
  const lock = LOCK_FIELD.exec(field);
  if (lock) return { userIndex: null, lockIndex: Number(lock[1]), member: null };
  return { userIndex: null, lockIndex: null, member: field };
}

export interface PermissionCounts {
  access: number;
  dual: number;
  usersWithAccess: number;
}

/** How many users may open at least one lock, and how many cells are access or dual authentication. */
export function permissionCounts(model: AclModel): PermissionCounts {
  let access = 0;
  let dual = 0;
  let usersWithAccess = 0;
  for (const user of model.users) {
    let any = false;
    for (const value of user.permissions) {
      if (value === 1) access++;
      else if (value === 17) dual++;
      else continue;
      any = true;
    }
    if (any) usersWithAccess++;
  }
  return { access, dual, usersWithAccess };
}

/**
 * The counts after one cell of `user` changes to `value`, without counting the whole ACL
 * again (five million cells at the caps): only that user's row is read.
 */
export function countsAfterCellChange(counts: PermissionCounts, user: AclUserModel, lockIndex: number, value: Permission): PermissionCounts {
  const before = user.permissions[lockIndex]!;
  const tally = (permission: Permission, sign: number) => ({ access: permission === 1 ? sign : 0, dual: permission === 17 ? sign : 0 });
  const removed = tally(before, -1);
  const added = tally(value, 1);
  const hadAccess = user.permissions.some((permission) => permission !== 0);
  const hasAccess = value !== 0 || user.permissions.some((permission, index) => index !== lockIndex && permission !== 0);
  return {
    access: counts.access + removed.access + added.access,
    dual: counts.dual + removed.dual + added.dual,
    usersWithAccess: counts.usersWithAccess + Number(hasAccess) - Number(hadAccess),
  };
}
