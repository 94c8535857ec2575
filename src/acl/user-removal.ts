import { actingCustomer } from '../auth/guard.ts';
import { recordChanges, type Change } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { conflict } from '../http/errors.ts';
import { aclChange, type AclState } from './audit-view.ts';
import { canonicalUsersJson } from './model.ts';
import { linkAclToOkm } from './okm-link.ts';
import { findAclsHoldingUser, lockAcl, updateAclContent, writeAclFindables, type AclHoldingUser } from './repository.ts';
import type { AclUser } from './schemas.ts';
import type { AclRequest } from './service.ts';

/** What a removal of a user from every ACL of a customer touches (the preview), or touched (once applied). */
export interface UserRemoval {
  customer: string;
  userId: number;
  acls: AclHoldingUser[];
  /** The OKMs linked to those ACLs, whose user asset lists change with them. */
  okmSerials: string[];
  /** More ACLs than the bound hold the user: acls are the first of them, and the removal is refused. */
  overLimit: boolean;
  applied: boolean;
}

/** The whole removal is one transaction: a user held by more ACLs than this is refused, not removed in part. */
const tooMany = (userId: number, customer: string, max: number) =>
  conflict(`user_id: user ${userId} is in more than ${max} ACLs of ${customer} (BULK_ACTION_MAX); remove it from some of them one ACL at a time first`);

const removalOf = (customer: string, userId: number, acls: AclHoldingUser[], applied: boolean, overLimit = false): UserRemoval => ({
  customer,
  userId,
  acls,
  okmSerials: acls.flatMap((acl) => (acl.okmSerial === null ? [] : [acl.okmSerial])).sort(),
  overLimit,
  applied,
});

async function holdersWithin(db: Db, customer: { id: number; name: string }, userId: number, max: number): Promise<AclHoldingUser[]> {
  const acls = await findAclsHoldingUser(db, customer.id, userId, max + 1);
  if (acls.length > max) throw tooMany(userId, customer.name, max);
  return acls;
}

/** The preview: the customer's ACLs that hold the user (the first `max`), and the OKMs linked to them; nothing changes. */
export async function previewUserRemoval(request: AclRequest, customerName: string, userId: number, max: number): Promise<UserRemoval> {
  const customer = (await actingCustomer(request.db, request.principal, customerName))!;
  const acls = await findAclsHoldingUser(request.db, customer.id, userId, max + 1);
  return removalOf(customer.name, userId, acls.slice(0, max), false, acls.length > max);
}

/** As the lists sort them (ids are lowercase UUIDs): the order expected ids are compared in. */
const sameIds = (left: readonly string[], right: readonly string[]) => left.length === right.length && left.every((id, index) => id === right[index]);

/**
 * Removes the user from every ACL of the customer that holds it, in one transaction: each ACL
 * keeps its other users, its locks, name, user_data and link; the OKM linked to it gets the new
 * user list (its next poll sends it); each ACL changed gets its acl.updated entry, recording
 * the user removed and nothing else. `expectedAclIds` (the preview's): when given, the removal
 * is refused with 409, changing nothing, unless the ACLs holding the user are exactly those.
 */
export async function removeUserFromAcls(request: AclRequest, customerName: string, userId: number, max: number, expectedAclIds?: readonly string[]): Promise<UserRemoval> {
  const customer = (await actingCustomer(request.db, request.principal, customerName))!;
  return request.db.transaction().execute(async (trx) => {
    const holders = await holdersWithin(trx, customer, userId, max);
    if (expectedAclIds !== undefined) {
      const expected = expectedAclIds.map((id) => id.toLowerCase()).sort();
      if (!sameIds(expected, holders.map((acl) => acl.id))) {
        throw conflict(`acl_ids: user ${userId} is now in ${holders.length} ACLs of ${customer.name}, not the ${expected.length} previewed; preview again`);
      }
    }
    const changed: AclHoldingUser[] = [];
    const changes: Change[] = [];
    // By id, the order every writer of several ACLs takes their locks in.
    for (const holder of holders) {
      const locked = await lockAcl(trx, request.locking, holder.id);
      if (locked?.customerId !== customer.id) continue;
      const content = locked;
      const users = JSON.parse(content.usersJson) as AclUser[];
      const kept = users.filter((user) => user.user_id !== userId);
      if (kept.length === users.length) continue;
      const locks = JSON.parse(content.locksJson) as string[];
      const next = { usersJson: canonicalUsersJson(kept), locksJson: content.locksJson, userDataJson: content.userDataJson, userCount: kept.length, lockCount: locks.length };
      await updateAclContent(trx, holder.id, next, request.now);
      await writeAclFindables(trx, holder.id, customer.id, { name: locked.name, userIds: kept.map((user) => user.user_id), lockSerials: locks });
      await linkAclToOkm(trx, { id: holder.id, customerId: customer.id }, locked.okmSerial, undefined, next, request.now);
      const state = (list: AclUser[]): AclState => ({ customer: customer.name, name: locked.name, okm_id: locked.okmSerial, locks, usersJson: '', users: list, userDataJson: content.userDataJson });
      changes.push(aclChange(holder.id, state(users), state(kept)));
      changed.push({ id: holder.id, name: locked.name, okmSerial: locked.okmSerial });
    }
    await recordChanges(trx, request.source, changes, request.now);
    return removalOf(customer.name, userId, changed, true);
  });
}
