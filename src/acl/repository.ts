import type { Insertable, Selectable } from 'kysely';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { AclContentsTable, AclsTable } from '../db/schema.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../http/cursor-paging.ts';
import type { StoredAcl } from './model.ts';

type AclRow = Selectable<AclsTable> & Pick<Selectable<AclContentsTable>, 'users' | 'locks' | 'user_data'> & { customer_name: string };

/** What a write stores: everything but the link and the times. */
export interface AclContent {
  usersJson: string;
  locksJson: string;
  userDataJson: string | null;
  userCount: number;
  lockCount: number;
}

function toStoredAcl(row: AclRow): StoredAcl {
  return {
    id: row.id,
    customerId: row.customer_id,
    customerName: row.customer_name,
    usersJson: row.users,
    locksJson: row.locks,
    userDataJson: row.user_data,
  };
}

const contentColumns = (content: AclContent) => ({
  users: content.usersJson,
  locks: content.locksJson,
  user_data: content.userDataJson,
  user_count: content.userCount,
  lock_count: content.lockCount,
});

const selectAcls = (db: Db) =>
  db
    .selectFrom('acls')
    .innerJoin('customers', 'customers.id', 'acls.customer_id')
    .innerJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .selectAll('acls')
    .select(['customers.name as customer_name', 'acl_contents.users', 'acl_contents.locks', 'acl_contents.user_data']);

export async function findAcl(db: Db, id: string): Promise<StoredAcl | undefined> {
  const row = await selectAcls(db).where('acls.id', '=', id).executeTakeFirst();
  return row && toStoredAcl(row);
}

/** How many ACLs the customer has: a count of its entries of acls_customer_idx (customer_id, id), no row read. */
async function countAcls(db: Db, customerId: number): Promise<number> {
  const row = await db
    .selectFrom('acls')
    .select((eb) => eb.fn.countAll<number | string>().as('total'))
    .where('customer_id', '=', customerId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/**
 * One page (from 1) of the customer's ACLs ordered by id (the seed's list: `page` and
 * `results_per_page`), and how many it has in all. A deferred join: the page's ids are picked
 * from acls_customer_idx (customer_id, id) alone, walking the entries before the page there
 * without reading their rows (ACL contents reach megabytes), and only the page's rows are then
 * read; the total counts the same index range.
 */
export async function listAcls(db: Db, customerId: number, page: number, perPage: number): Promise<{ acls: StoredAcl[]; total: number }> {
  const pageIds = db
    .selectFrom('acls')
    .select('id')
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .limit(perPage)
    .offset((page - 1) * perPage);
  const [rows, total] = await Promise.all([selectAcls(db).where('acls.id', 'in', pageIds).orderBy('acls.id').execute(), countAcls(db, customerId)]);
  return { acls: rows.map(toStoredAcl), total };
}

/** An ACL without its lists: their sizes, the link and when it last changed. */
export interface AclSummary {
  id: string;
  customerName: string;
  userCount: number;
  lockCount: number;
  okmSerial: string | null;
  updatedAt: number;
  userDataJson: string | null;
}

/** ACL summaries page by id, as the seed's list orders the ACLs. */
export const ACL_SUMMARY_PAGES = cursorList<[id: string]>('acl-summaries', ['string']);

/**
 * One page of the customer's ACLs ordered by id, as summaries, after the cursor's id: the
 * page's ids are a range of acls_customer_idx (customer_id, id) entered at the cursor, and
 * only their rows are read.
 */
export async function listAclSummaries(db: Db, customerId: number, page: CursorPageRequest<[string]>): Promise<CursorPage<AclSummary>> {
  let pageIds = db.selectFrom('acls').select('id').where('customer_id', '=', customerId).orderBy('id').limit(page.limit + 1);
  if (page.after !== undefined) pageIds = pageIds.where(afterKey(['id'], page.after));
  const rows = await db
    .selectFrom('acls')
    .innerJoin('customers', 'customers.id', 'acls.customer_id')
    .innerJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .select(['acls.id', 'customers.name as customer_name', 'acls.okm_serial', 'acls.updated_at', 'acl_contents.user_data', 'acl_contents.user_count', 'acl_contents.lock_count'])
    .where('acls.id', 'in', pageIds)
    .orderBy('acls.id')
    .execute();
  const summaries = rows.map((row) => ({
    id: row.id,
    customerName: row.customer_name,
    userCount: Number(row.user_count),
    lockCount: Number(row.lock_count),
    okmSerial: row.okm_serial,
    updatedAt: Number(row.updated_at),
    userDataJson: row.user_data,
  }));
  return ACL_SUMMARY_PAGES.page(summaries, page.limit, (summary) => [summary.id]);
}

/** Inserts a new, unlinked ACL; false when the id is taken (a concurrent insert waits for the first to end). */
export async function insertAcl(db: Db, id: string, customerId: number, content: AclContent, now: number): Promise<boolean> {
  const row: Insertable<AclsTable> = { id, customer_id: customerId, okm_serial: null, created_at: now, updated_at: now };
  const result = await db.insertInto('acls').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return false;
  await db.insertInto('acl_contents').values({ acl_id: id, ...contentColumns(content) }).execute();
  return true;
}

/**
 * Takes the ACL's row lock for the rest of the transaction (a no-op update, as lockOkm does),
 * so that writes of one ACL apply one after the other; returns its owner and link, or
 * undefined when there is no such ACL.
 */
export async function lockAcl(db: Db, id: string): Promise<{ customerId: number; okmSerial: string | null } | undefined> {
  const row = await db
    .updateTable('acls')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', id)
    .returning(['customer_id', 'okm_serial'])
    .executeTakeFirst();
  return row && { customerId: row.customer_id, okmSerial: row.okm_serial };
}

/** Replaces the content of an ACL whose row lock the transaction holds. */
export async function updateAclContent(db: Db, id: string, content: AclContent, now: number): Promise<void> {
  await db.updateTable('acl_contents').set(contentColumns(content)).where('acl_id', '=', id).execute();
  await db.updateTable('acls').set({ updated_at: now }).where('id', '=', id).execute();
}

/** The ACL's owner and the OKM it is linked to; undefined when there is no such ACL. */
export async function findAclLink(db: Db, id: string): Promise<{ customerId: number; okmSerial: string | null } | undefined> {
  const row = await db.selectFrom('acls').select(['customer_id', 'okm_serial']).where('id', '=', id).executeTakeFirst();
  return row && { customerId: row.customer_id, okmSerial: row.okm_serial };
}

/** Deletes the ACL with its content. */
export async function deleteAcl(db: Db, id: string): Promise<void> {
  await db.deleteFrom('acls').where('id', '=', id).execute();
}
