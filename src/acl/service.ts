import { randomUUID } from 'node:crypto';
import { actingCustomer, type Principal } from '../auth/guard.ts';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Customer } from '../customers/repository.ts';
import { cursorPageRequest, type CursorPage } from '../db/cursor-pages.ts';
import type { Db } from '../db/database.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { checkIfMatch, type IfMatch } from '../http/preconditions.ts';
import { pageOf, perPageOf } from '../http/schemas.ts';
import { memberSource } from '../shared/raw-json.ts';
import { aclChange, userIdsOf, type AclState } from './audit-view.ts';
import { aclEtag, aclJson, canonicalUsersJson, checkAclRules, type StoredAcl } from './model.ts';
import { linkAclToOkm, releaseOkmOfDeletedAcl } from './okm-link.ts';
import {
  ACL_SUMMARY_PAGES,
  ACL_SUMMARY_PAGES_BY_NAME,
  deleteAcl,
  findAcl,
  findAclLink,
  insertAcl,
  listAclSummaries,
  listAclSummariesByName,
  listAcls,
  lockAcl,
  updateAclContent,
  writeAclFindables,
  type AclContent,
  type AclFindables,
  type AclSummary,
  type LockedAcl,
  type RowLocking,
  type StoredLists,
} from './repository.ts';
import type { AclBody, AclListQuery, AclSearch, AclSummaryListQuery } from './schemas.ts';

/** Who asks, and when. */
export interface AclRequest {
  db: Db;
  principal: Principal;
  now: number;
  /** Who changes, for the audit trail (unused by reads). */
  source: ChangeSource;
  /** The write's If-Match, checked under the ACL's row lock; undefined: unconditional. */
  ifMatch?: IfMatch;
  /** How a write locks the ACL's row: the dialect's (unused by reads). */
  locking: RowLocking;
}

/** A POST or PUT body, parsed and as the JSON text it came in (user_data is kept as written). */
export interface AclWrite {
  body: AclBody;
  jsonText: string;
}

const ACL_NOT_FOUND = 'Access control list not found';
const DUPLICATE_KEY = 'id: duplicate key value violates unique constraint on ACL id and customer';

function contentOf({ body, jsonText }: AclWrite): AclContent {
  const userDataJson = body.user_data === undefined ? null : memberSource(jsonText, 'user_data')!;
  checkAclRules(body, userDataJson);
  return { usersJson: canonicalUsersJson(body.users), locksJson: JSON.stringify(body.locks), userDataJson, userCount: body.users.length, lockCount: body.locks.length };
}

/**
 * What the searches will read of the ACL after the write. Its name: the body's, none when the
 * body sends null, the current one when it sends none (as okm_id: absent keeps), so that a
 * client that knows only the fields of contract §0.6 never erases a name an operator gave.
 */
const findablesAfter = (body: AclBody, currentName: string | null): AclFindables => ({
  name: body.name === undefined ? currentName : body.name,
  userIds: body.users.map((user) => user.user_id),
  lockSerials: body.locks,
});

const storedAcl = (id: string, owner: Customer, name: string | null, content: AclContent, okmSerial: string | null): StoredAcl => ({
  id,
  customerId: owner.id,
  customerName: owner.name,
  name,
  usersJson: content.usersJson,
  locksJson: content.locksJson,
  userDataJson: content.userDataJson,
  okmSerial,
});

/** The ACL as the audit trail records it. */
const aclState = (acl: Pick<StoredAcl, 'customerName' | 'name' | 'usersJson' | 'locksJson' | 'userDataJson'>, okmSerial: string | null): AclState => ({
  customer: acl.customerName,
  name: acl.name,
  okm_id: okmSerial,
  locks: JSON.parse(acl.locksJson) as string[],
  usersJson: acl.usersJson,
  userDataJson: acl.userDataJson,
});

/** The state the write leaves: the OKM the body names, or (absent) the one it had. */
const stateAfter = (acl: StoredAcl, current: string | null, requested: string | null | undefined, users: AclBody['users']): AclState => ({ ...aclState(acl, requested === undefined ? current : requested), users });

/** The ACL as stored before this transaction changes it, as lockAcl read it (its users are parsed only where the trail's diff needs them). */
const stateBefore = (owner: Pick<Customer, 'name'>, locked: LockedAcl): AclState => aclState({ customerName: owner.name, ...locked }, locked.okmSerial);

/** The lists the ACL's rows of acl_users and acl_locks hold: those of its content before the write. */
function listsOf(state: AclState): StoredLists {
  return { userIds: userIdsOf(state), lockSerials: state.locks };
}

/** The customer named in the body, which a customer-bound token can only name as its own. */
async function ownerNamedIn(request: AclRequest, body: AclBody): Promise<Customer> {
  return (await actingCustomer(request.db, request.principal, body.customer))!;
}

const visibleTo = (acting: Customer | null, customerId: number) => acting === null || acting.id === customerId;

/** As lockAcl, but an ACL the acting customer may not see is "not found" like a missing one. */
async function lockVisibleAcl(trx: Db, request: AclRequest, acting: Customer | null, id: string) {
  const locked = await lockAcl(trx, request.locking, id);
  if (!locked || !visibleTo(acting, locked.customerId)) throw notFound(ACL_NOT_FOUND);
  return locked;
}

/**
 * Evaluates the request's If-Match against the ACL as stored, as the write read it after its
 * row lock was taken: no other write of the ACL can come between the check and this one.
 */
function checkAclVersion(request: AclRequest, acl: StoredAcl): void {
  if (request.ifMatch === undefined) return;
  checkIfMatch(request.ifMatch, aclEtag(acl, acl.okmSerial ?? null), () => aclJson(acl));
}

/** The ACL as lockAcl read it, its owner being `owner`. */
const lockedAcl = (id: string, owner: Customer, locked: LockedAcl): StoredAcl => ({ id, customerName: owner.name, ...locked });

/**
 * POST: creates the ACL, or overwrites the customer's own ACL with that id (both 201). An id
 * held by another customer is the duplicate-key 400.
 */
export async function createAcl(request: AclRequest, write: AclWrite): Promise<StoredAcl> {
  const owner = await ownerNamedIn(request, write.body);
  const content = contentOf(write);
  const id = (write.body.id ?? randomUUID()).toLowerCase();
  return request.db.transaction().execute(async (trx) => {
    let current: string | null = null;
    let currentName: string | null = null;
    let before: AclState | undefined;
    // With If-Match, POST only overwrites: there is no version of a missing ACL to match (RFC 9110 §13.1.1).
    if (request.ifMatch !== undefined && !(await lockAcl(trx, request.locking, id))) checkIfMatch(request.ifMatch, null, () => 'null');
    const created = await insertAcl(trx, id, owner.id, content, request.now);
    if (!created) {
      const locked = await lockAcl(trx, request.locking, id);
      if (!locked) throw conflict('id: the ACL was deleted while this request ran; send it again');
      if (locked.customerId !== owner.id) throw badRequest(DUPLICATE_KEY);
      checkAclVersion(request, lockedAcl(id, owner, locked));
      before = stateBefore(owner, locked);
      await updateAclContent(trx, id, content, request.now);
      current = locked.okmSerial;
      currentName = locked.name;
    }
    const findables = findablesAfter(write.body, currentName);
    await writeAclFindables(trx, id, owner.id, findables, before && listsOf(before));
    await linkAclToOkm(trx, { id, customerId: owner.id }, current, write.body.okm_id, content, request.now);
    const acl = storedAcl(id, owner, findables.name, content, write.body.okm_id === undefined ? current : write.body.okm_id);
    await recordChange(trx, request.source, aclChange(id, before, stateAfter(acl, current, write.body.okm_id, write.body.users)), request.now);
    return acl;
  });
}

/** PUT: replaces an existing ACL of the customer; its customer cannot change. */
export async function replaceAcl(request: AclRequest, id: string, customerName: string | undefined, write: AclWrite): Promise<StoredAcl> {
  if (write.body.id !== undefined && write.body.id.toLowerCase() !== id) throw badRequest('id: must be the id in the path');
  const acting = await actingCustomer(request.db, request.principal, customerName);
  const owner = await ownerNamedIn(request, write.body);
  const content = contentOf(write);
  return request.db.transaction().execute(async (trx) => {
    const locked = await lockVisibleAcl(trx, request, acting, id);
    if (locked.customerId !== owner.id) throw badRequest('customer: cannot be changed');
    checkAclVersion(request, lockedAcl(id, owner, locked));
    const before = stateBefore(owner, locked);
    await updateAclContent(trx, id, content, request.now);
    const findables = findablesAfter(write.body, locked.name);
    await writeAclFindables(trx, id, owner.id, findables, listsOf(before));
    await linkAclToOkm(trx, { id, customerId: owner.id }, locked.okmSerial, write.body.okm_id, content, request.now);
    const acl = storedAcl(id, owner, findables.name, content, write.body.okm_id === undefined ? locked.okmSerial : write.body.okm_id);
    await recordChange(trx, request.source, aclChange(id, before, stateAfter(acl, locked.okmSerial, write.body.okm_id, write.body.users)), request.now);
    return acl;
  });
}

export async function getAcl(request: AclRequest, id: string, customerName: string | undefined): Promise<StoredAcl> {
  const acting = await actingCustomer(request.db, request.principal, customerName);
  const acl = await findAcl(request.db, id);
  if (!acl || !visibleTo(acting, acl.customerId)) throw notFound(ACL_NOT_FOUND);
  return acl;
}

/** The serial number of the OKM the ACL is linked to, or null (ACL responses never carry okm_id). */
export async function getAclOkm(request: AclRequest, id: string, customerName: string | undefined): Promise<string | null> {
  const acting = await actingCustomer(request.db, request.principal, customerName);
  const link = await findAclLink(request.db, id);
  if (!link || !visibleTo(acting, link.customerId)) throw notFound(ACL_NOT_FOUND);
  return link.okmSerial;
}

/** The search parameters of a list query (the rest is paging and the customer). */
function searchOf(query: AclSearch): AclSearch {
  return {
    ...(query.user_id === undefined ? {} : { user_id: query.user_id }),
    ...(query.lock === undefined ? {} : { lock: query.lock }),
    ...(query.name_contains === undefined ? {} : { name_contains: query.name_contains }),
  };
}

export async function listCustomerAcls(request: AclRequest, query: AclListQuery): Promise<{ acls: StoredAcl[]; total: number }> {
  const customer = (await actingCustomer(request.db, request.principal, query.customer))!;
  return listAcls(request.db, customer.id, searchOf(query), pageOf(query), perPageOf(query));
}

/** GET /api/v1/acl-summaries: a page of the customer's ACLs without their lists. */
export async function listCustomerAclSummaries(request: AclRequest, query: AclSummaryListQuery): Promise<CursorPage<AclSummary>> {
  if (query.sort === 'name') {
    const page = cursorPageRequest(ACL_SUMMARY_PAGES_BY_NAME, query);
    const customer = (await actingCustomer(request.db, request.principal, query.customer))!;
    return listAclSummariesByName(request.db, customer.id, searchOf(query), page);
  }
  const page = cursorPageRequest(ACL_SUMMARY_PAGES, query);
  const customer = (await actingCustomer(request.db, request.principal, query.customer))!;
  return listAclSummaries(request.db, customer.id, searchOf(query), page);
}

/** DELETE: the ACL goes; the OKM it was linked to gets a delete-assets message. */
export async function removeAcl(request: AclRequest, id: string, customerName: string | undefined): Promise<void> {
  const acting = await actingCustomer(request.db, request.principal, customerName);
  await request.db.transaction().execute(async (trx) => {
    const locked = await lockVisibleAcl(trx, request, acting, id);
    const stored = { ...(await findAcl(trx, id))!, okmSerial: locked.okmSerial };
    checkAclVersion(request, stored);
    const before = aclState(stored, locked.okmSerial);
    await deleteAcl(trx, id);
    if (locked.okmSerial !== null) await releaseOkmOfDeletedAcl(trx, locked.okmSerial, request.now);
    await recordChange(trx, request.source, aclChange(id, before, undefined), request.now);
  });
}
