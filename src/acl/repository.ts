import { sql, type Insertable, type Selectable, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { AclContentsTable, AclsTable, Database } from '../db/schema.ts';
import { aclNameSearchKey, type StoredAcl } from './model.ts';
import type { AclSearch } from './schemas.ts';

type AclRow = Selectable<AclsTable> & Pick<Selectable<AclContentsTable>, 'users' | 'locks' | 'user_data'> & { customer_name: string };

/** What a write stores: everything but the link and the times. */
export interface AclContent {
  usersJson: string;
  locksJson: string;
  userDataJson: string | null;
  userCount: number;
  lockCount: number;
}

/** The dialect's row-locking clause, which lockAcl takes. */
export type RowLocking = Pick<DialectStrategy, 'lockRowsInOrder'>;

/** What the searches read of an ACL, besides its owner: its name and the user ids and lock serials its lists hold. */
export interface AclFindables {
  name: string | null;
  userIds: readonly number[];
  lockSerials: readonly string[];
}

function toStoredAcl(row: AclRow): StoredAcl {
  return {
    id: row.id,
    customerId: row.customer_id,
    customerName: row.customer_name,
    name: row.name,
    usersJson: row.users,
    locksJson: row.locks,
    userDataJson: row.user_data,
    okmSerial: row.okm_serial,
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

/** A LIKE pattern that matches `text` anywhere, its own % _ and \ taken literally (with ESCAPE '\'). */
const likeContaining = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

/**
 * The customer's ACLs that the search finds, every condition an AND. Each condition reads an
 * index that starts with the customer: the name, acls_customer_name_idx (customer_id,
 * name_key, id), one customer's entries only, never a row; a user id or a lock, the side
 * tables' (customer_id, user_id | lower(lock_serial), acl_id), a range of exactly the ACLs that
 * hold it (a lock whatever its case: serial numbers are ASCII, which lower() folds alike everywhere).
 */
function searchedAcls(db: Db, customerId: number, search: AclSearch) {
  let query = db.selectFrom('acls').where('acls.customer_id', '=', customerId);
  if (search.name_contains !== undefined) {
    query = query.where(sql<SqlBool>`${sql.ref('acls.name_key')} LIKE ${likeContaining(aclNameSearchKey(search.name_contains))} ESCAPE '\\'`);
  }
  if (search.user_id !== undefined) {
    const holders = db.selectFrom('acl_users').select('acl_users.acl_id').where('acl_users.customer_id', '=', customerId).where('acl_users.user_id', '=', search.user_id);
    query = query.where('acls.id', 'in', holders);
  }
  if (search.lock !== undefined) {
    const holders = db.selectFrom('acl_locks').select('acl_locks.acl_id').where('acl_locks.customer_id', '=', customerId).where(sql<string>`lower(${sql.ref('acl_locks.lock_serial')})`, '=', search.lock.toLowerCase());
    query = query.where('acls.id', 'in', holders);
  }
  return query;
}

/**
 * How many of the customer's ACLs the search finds; with no search, a count of its entries of
 * acls_customer_idx (customer_id, id), no row read.
 */
async function countAcls(db: Db, customerId: number, search: AclSearch): Promise<number> {
  const row = await searchedAcls(db, customerId, search)
    .select((eb) => eb.fn.countAll<number | string>().as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/**
 * One page (from 1) of the customer's ACLs that the search finds, ordered by id (the list of
 * contract §0.6 and §8.3: `page` and `results_per_page`), and how many it finds in all. A deferred join: the
 * page's ids are picked from the indexes alone (acls_customer_idx (customer_id, id) without a
 * search), walking the entries before the page there without reading their rows (ACL contents
 * reach megabytes), and only the page's rows are then read; the total counts the same entries.
 */
export async function listAcls(db: Db, customerId: number, search: AclSearch, page: number, perPage: number): Promise<{ acls: StoredAcl[]; total: number }> {
  const pageIds = searchedAcls(db, customerId, search)
    .select('acls.id')
    .orderBy('acls.id')
    .limit(perPage)
    .offset((page - 1) * perPage);
  const [rows, total] = await Promise.all([selectAcls(db).where('acls.id', 'in', pageIds).orderBy('acls.id').execute(), countAcls(db, customerId, search)]);
  return { acls: rows.map(toStoredAcl), total };
}

/** An ACL without its lists: their sizes, the link and when it last changed. */
export interface AclSummary {
  id: string;
  customerName: string;
  name: string | null;
  userCount: number;
  lockCount: number;
  okmSerial: string | null;
  updatedAt: number;
  userDataJson: string | null;
}

/** ACL summaries page by id, as the list of contract §8.3 orders the ACLs. */
export const ACL_SUMMARY_PAGES = cursorList<[id: string]>('acl-summaries', ['string']);

/**
 * One page of the customer's ACLs that the search finds, ordered by id, as summaries, after the
 * cursor's id: without a search the page's ids are a range of acls_customer_idx (customer_id,
 * id) entered at the cursor; only the page's rows are read.
 */
export async function listAclSummaries(db: Db, customerId: number, search: AclSearch, page: CursorPageRequest<[string]>): Promise<CursorPage<AclSummary>> {
  let pageIds = searchedAcls(db, customerId, search).select('acls.id').orderBy('acls.id').limit(page.limit + 1);
  if (page.after !== undefined) pageIds = pageIds.where(afterKey(['acls.id'], page.after));
  const summaries = await aclSummariesOf(db, pageIds);
  return ACL_SUMMARY_PAGES.page(summaries, page.limit, (summary) => [summary.id]);
}

/**
 * ACL summaries by name: the named ACLs by their case-folded name (ties by id), then the
 * unnamed ones by id. The key says which of the two the row is in (0 named, 1 unnamed), its
 * name key ('' when unnamed) and its id.
 */
export const ACL_SUMMARY_PAGES_BY_NAME = cursorList<[unnamed: number, nameKey: string, id: string]>('acl-summaries-by-name', ['integer', 'string', 'string']);

/**
 * One page of the customer's ACLs that the search finds, by name, after the cursor's. Two
 * ranges of acls_customer_name_idx (customer_id, name_key, id), each entered at the cursor and
 * read for at most a page: the named ACLs (name_key, id) and, once they end within the page,
 * those without a name (name_key IS NULL, by id). Where the databases put NULLs in an order
 * differs, so the unnamed ACLs are never left to the order's NULL rule. Only the page's rows are read.
 */
export async function listAclSummariesByName(
  db: Db,
  customerId: number,
  search: AclSearch,
  page: CursorPageRequest<[number, string, string]>,
): Promise<CursorPage<AclSummary>> {
  const keys: [number, string, string][] = [];
  const inUnnamed = page.after !== undefined && page.after[0] === 1;
  if (!inUnnamed) {
    let named = searchedAcls(db, customerId, search).select(['acls.id', 'acls.name_key']).where('acls.name_key', 'is not', null).orderBy('acls.name_key').orderBy('acls.id').limit(page.limit + 1);
    if (page.after !== undefined) named = named.where(afterKey(['acls.name_key', 'acls.id'], [page.after[1], page.after[2]]));
    for (const row of await named.execute()) keys.push([0, row.name_key!, row.id]);
  }
  if (keys.length <= page.limit) {
    let unnamed = searchedAcls(db, customerId, search).select('acls.id').where('acls.name_key', 'is', null).orderBy('acls.id').limit(page.limit + 1 - keys.length);
    if (inUnnamed) unnamed = unnamed.where(afterKey(['acls.id'], [page.after![2]]));
    for (const row of await unnamed.execute()) keys.push([1, '', row.id]);
  }
  const byId = new Map((await aclSummariesOf(db, keys.map((key) => key[2]))).map((summary) => [summary.id, summary]));
  // A row deleted between the two reads is left out; the key of the page's last row stays its own.
  const rows = keys.flatMap((key) => {
    const summary = byId.get(key[2]);
    return summary === undefined ? [] : [{ key, summary }];
  });
  const paged = ACL_SUMMARY_PAGES_BY_NAME.page(rows, page.limit, (row) => row.key);
  return { items: paged.items.map((row) => row.summary), nextCursor: paged.nextCursor };
}

/** The summaries of these ACLs (a subquery of their ids, or the ids), by id. */
async function aclSummariesOf(db: Db, ids: readonly string[] | SelectQueryBuilder<Database, 'acls', { id: string }>): Promise<AclSummary[]> {
  if (Array.isArray(ids) && ids.length === 0) return [];
  const rows = await db
    .selectFrom('acls')
    .innerJoin('customers', 'customers.id', 'acls.customer_id')
    .innerJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
    .select(['acls.id', 'customers.name as customer_name', 'acls.name', 'acls.okm_serial', 'acls.updated_at', 'acl_contents.user_data', 'acl_contents.user_count', 'acl_contents.lock_count'])
    .where('acls.id', 'in', ids as readonly string[])
    .orderBy('acls.id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    customerName: row.customer_name,
    name: row.name,
    userCount: Number(row.user_count),
    lockCount: Number(row.lock_count),
    okmSerial: row.okm_serial,
    updatedAt: Number(row.updated_at),
    userDataJson: row.user_data,
  }));
}

/** Inserts a new, unlinked ACL; false when the id is taken (a concurrent insert waits for the first to end). */
export async function insertAcl(db: Db, id: string, customerId: number, content: AclContent, now: number): Promise<boolean> {
  const row: Insertable<AclsTable> = { id, customer_id: customerId, okm_serial: null, created_at: now, updated_at: now };
  const result = await db.insertInto('acls').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return false;
  await db.insertInto('acl_contents').values({ acl_id: id, ...contentColumns(content) }).execute();
  return true;
}

/** Rows a side-table statement writes or deletes at most: within both databases' limits on bound parameters. */
const MEMBER_ROWS_PER_STATEMENT = 1000;

function* slices<T>(items: readonly T[]): Generator<T[]> {
  for (let start = 0; start < items.length; start += MEMBER_ROWS_PER_STATEMENT) yield items.slice(start, start + MEMBER_ROWS_PER_STATEMENT);
}

/** What leaves and what joins when a list `current` becomes `wanted`. */
function changes<T>(current: readonly T[], wanted: readonly T[]): { gone: T[]; added: T[] } {
  const before = new Set(current);
  const after = new Set(wanted);
  return { gone: current.filter((item) => !after.has(item)), added: wanted.filter((item) => !before.has(item)) };
}

/** The user ids and lock serials an ACL's rows of acl_users and acl_locks hold. */
export type StoredLists = Pick<AclFindables, 'userIds' | 'lockSerials'>;

async function storedLists(db: Db, id: string): Promise<StoredLists> {
  const [users, locks] = await Promise.all([
    db.selectFrom('acl_users').select('user_id').where('acl_id', '=', id).execute(),
    db.selectFrom('acl_locks').select('lock_serial').where('acl_id', '=', id).execute(),
  ]);
  return { userIds: users.map((row) => Number(row.user_id)), lockSerials: locks.map((row) => row.lock_serial) };
}

/**
 * Stores what the searches read of an ACL just inserted or replaced: its name with its search
 * key, and its rows of acl_users and acl_locks brought to its new lists. Only the user ids and
 * serials that left or joined are written, so a replace that changes permissions only (the
 * common edit) writes none, however large the ACL. Runs in the write's transaction, under the
 * ACL's row lock; the side tables have no other writer (a deleted ACL's rows go by cascade).
 * `stored`: the lists as the ACL's content held them before the write, read under the same lock
 * (they are what its rows hold, written with it); without, the rows are read.
 */
export async function writeAclFindables(db: Db, id: string, customerId: number, findables: AclFindables, stored?: StoredLists): Promise<void> {
  const { name } = findables;
  await db.updateTable('acls').set({ name, name_key: name === null ? null : aclNameSearchKey(name) }).where('id', '=', id).execute();
  const current = stored ?? (await storedLists(db, id));
  const userChanges = changes(current.userIds, findables.userIds);
  const lockChanges = changes(current.lockSerials, findables.lockSerials);
  for (const gone of slices(userChanges.gone)) await db.deleteFrom('acl_users').where('acl_id', '=', id).where('user_id', 'in', gone).execute();
  for (const added of slices(userChanges.added)) {
    await db.insertInto('acl_users').values(added.map((userId) => ({ acl_id: id, customer_id: customerId, user_id: userId }))).execute();
  }
  for (const gone of slices(lockChanges.gone)) await db.deleteFrom('acl_locks').where('acl_id', '=', id).where('lock_serial', 'in', gone).execute();
  for (const added of slices(lockChanges.added)) {
    await db.insertInto('acl_locks').values(added.map((serial) => ({ acl_id: id, customer_id: customerId, lock_serial: serial }))).execute();
  }
}

/** An ACL as a write finds it, its row locked: its owner, link and name, and its content as stored. */
export interface LockedAcl {
  customerId: number;
  okmSerial: string | null;
  name: string | null;
  usersJson: string;
  locksJson: string;
  userDataJson: string | null;
}

/**
 * Takes the ACL's row lock for the rest of the transaction, so that writes of one ACL apply one
 * after the other, and reads the ACL with its content in the same statement (what the write
 * checks, diffs for the audit trail and compares its lists with); undefined when there is no
 * such ACL. The lock is the dialect's locking clause (PostgreSQL: FOR NO KEY UPDATE). SQLite has
 * none and needs none: its transactions begin IMMEDIATE, holding the database's one write lock.
 */
export async function lockAcl(db: Db, locking: RowLocking, id: string): Promise<LockedAcl | undefined> {
  const [row] = (await lockingSelectOf(locking)(db, id)).rows;
  return row && { customerId: row.customer_id, okmSerial: row.okm_serial, name: row.name, usersJson: row.users, locksJson: row.locks, userDataJson: row.user_data };
}

const lockingSelects = new WeakMap<RowLocking, ReturnType<typeof compileLockingSelect>>();

/** lockAcl's statement, compiled once per dialect: it runs with every write of an ACL. */
const compileLockingSelect = (locking: RowLocking) =>
  precompiledQuery(1, (db, [id]) =>
    locking.lockRowsInOrder(
      db
        .selectFrom('acls')
        .innerJoin('acl_contents', 'acl_contents.acl_id', 'acls.id')
        .select(['acls.customer_id', 'acls.okm_serial', 'acls.name', 'acl_contents.users', 'acl_contents.locks', 'acl_contents.user_data'])
        .where('acls.id', '=', id as string),
    ),
  );

function lockingSelectOf(locking: RowLocking) {
  let select = lockingSelects.get(locking);
  if (select === undefined) lockingSelects.set(locking, (select = compileLockingSelect(locking)));
  return select;
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

/** An ACL that holds a user: what a removal of the user previews. */
export interface AclHoldingUser {
  id: string;
  name: string | null;
  okmSerial: string | null;
}

/**
 * The customer's ACLs whose users hold `userId`, by id, at most `max` of them: a range of
 * acl_users' (customer_id, user_id, acl_id) index, each ACL's row then read by its key.
 */
export async function findAclsHoldingUser(db: Db, customerId: number, userId: number, max: number): Promise<AclHoldingUser[]> {
  const holders = db.selectFrom('acl_users').select('acl_users.acl_id').where('acl_users.customer_id', '=', customerId).where('acl_users.user_id', '=', userId);
  const rows = await db.selectFrom('acls').select(['id', 'name', 'okm_serial']).where('customer_id', '=', customerId).where('id', 'in', holders).orderBy('id').limit(max).execute();
  return rows.map((row) => ({ id: row.id, name: row.name, okmSerial: row.okm_serial }));
}
