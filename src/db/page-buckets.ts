import { sql, type Expression } from 'kysely';
import type { Db } from './database.ts';
import type { AnyDb } from './migrate.ts';

/**
 * Where a page of a long list begins, without walking the entries before it.
 *
 * An OFFSET walks every entry it skips, even in an index (about 50 ns each on SQLite: a page
 * deep in a million takes 50 ms). So each list's keys are cut, per scope (one customer's, the
 * whole fleet's, one OKM's), into buckets of consecutive keys: `page_buckets` holds each
 * bucket's lowest key and how many entries it holds. Database triggers keep the counts on
 * every insert, delete and change of scope, whoever writes (migration 0014); a page then adds
 * up the few bucket counts before it and walks into one bucket only. A bucket that has grown
 * past MAX_BUCKET_ENTRIES is cut up when a page of its scope is next read.
 */

/** A cut bucket holds this many entries; so no page walks more than MAX_BUCKET_ENTRIES of them. */
export const BUCKET_ENTRIES = 1000;
export const MAX_BUCKET_ENTRIES = 2 * BUCKET_ENTRIES;

/** How a list's keys are stored and ordered, which the triggers and the reads agree on. */
export interface BucketedList {
  /** `page_buckets.list`. */
  name: string;
  table: string;
  /** The column the list is ordered by, unique in a scope. */
  keyColumn: string;
  /** Integer keys are kept as zero-padded text in page_buckets, so that text order is number order. */
  keyType: 'text' | 'integer';
  /**
   * The scopes a row is counted in, as SQL over the row (`row` is NEW or OLD in a trigger, the
   * table itself elsewhere): each is text, and the scope value that pages of the list name.
   */
  scopes: (row: string) => string[];
  /** Columns whose change moves a row from one scope to another. */
  scopeColumns: string[];
}

export const INTEGER_KEY_DIGITS = 20;

/** A key as page_buckets stores it (see BucketedList.keyType). */
export function bucketKeyOf(list: BucketedList, key: Key): string {
  return list.keyType === 'integer' ? String(key).padStart(INTEGER_KEY_DIGITS, '0') : String(key);
}

/** The lowest key of a bucket back in the list's own type; '' (the first bucket's) is below every key. */
function keyOfBucket(list: BucketedList, lowerKey: string): Key | null {
  if (lowerKey === '') return null;
  return list.keyType === 'integer' ? Number(lowerKey) : lowerKey;
}

export type Key = string | number;

/**
 * The list's keys in the scope (as a column `key`), from `from` (inclusive) to `before`
 * (exclusive), each bound null for none: a query on the list's own index.
 */
export type ScopeKeys = (db: Db, from: Key | null, before: Key | null) => Expression<{ key: Key }>;

/**
 * Counts the list's entries afresh, each scope as one bucket of all its entries (the first page
 * read cuts it): for rows written while the triggers did not run (a migration's existing rows).
 */
export async function recountPageBuckets(db: AnyDb, list: BucketedList): Promise<void> {
  await sql`DELETE FROM page_buckets WHERE list = ${list.name}`.execute(db);
  for (const scope of list.scopes(list.table)) {
    await sql`INSERT INTO page_buckets (list, scope, lower_key, entries)
      SELECT ${list.name}, scope, '', count(*) FROM (SELECT ${sql.raw(scope)} AS scope FROM ${sql.table(list.table)}) AS rows GROUP BY scope`.execute(db);
  }
}

/** How many entries the scope holds: the sum of its bucket counts. */
export async function scopeTotal(db: Db, list: BucketedList, scope: string): Promise<number> {
  const row = await db
    .selectFrom('page_buckets')
    .select((eb) => eb.fn.sum<number | string | null>('entries').as('total'))
    .where('list', '=', list.name)
    .where('scope', '=', scope)
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}

export interface PagePosition {
  /** The key where the walk to the page starts; null: the first key of the scope. */
  from: Key | null;
  /** How many keys the page lies after `from` (fewer than MAX_BUCKET_ENTRIES). */
  skip: number;
  /** Entries of the scope in all. */
  total: number;
}

/**
 * Where the entry at `offset` (from 0) of the scope lies: the bucket that holds it, found by
 * adding up the counts of the buckets before it. Cuts oversized buckets of the scope first.
 */
export async function pagePosition(db: Db, list: BucketedList, scope: string, keysOfScope: ScopeKeys, offset: number): Promise<PagePosition> {
  const bucket = await sql<{ lower_key: string; start: number | string; total: number | string; largest: number | string }>`
    select lower_key, start, total, largest from (
      select lower_key,
        sum(entries) over (order by lower_key) - entries as start,
        sum(entries) over () as total,
        max(entries) over () as largest
      from page_buckets where list = ${list.name} and scope = ${scope}
    ) as buckets
    where start <= ${offset}
    order by lower_key desc
    limit 1`.execute(db);
  const row = bucket.rows[0];
  if (row === undefined) return { from: null, skip: 0, total: 0 };
  if (Number(row.largest) > MAX_BUCKET_ENTRIES) {
    await cutOversizedBuckets(db, list, scope, keysOfScope);
    return pagePosition(db, list, scope, keysOfScope, offset);
  }
  return { from: keyOfBucket(list, row.lower_key), skip: offset - Number(row.start), total: Number(row.total) };
}

/**
 * Cuts every bucket of the scope that holds more than MAX_BUCKET_ENTRIES into buckets of
 * BUCKET_ENTRIES. Each bucket's row is locked first (a no-op update), then its keys are
 * counted afresh: on PostgreSQL a writer that inserted a key in it meanwhile waits for the lock
 * in its trigger and then looks its bucket up again (page_bucket_add), so no entry is counted
 * twice or missed.
 */
async function cutOversizedBuckets(db: Db, list: BucketedList, scope: string, keysOfScope: ScopeKeys): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const oversized = await trx
      .updateTable('page_buckets')
      .set((eb) => ({ entries: eb.ref('entries') }))
      .where('list', '=', list.name)
      .where('scope', '=', scope)
      .where('entries', '>', MAX_BUCKET_ENTRIES)
      .returning('lower_key')
      .execute();
    for (const { lower_key: lowerKey } of oversized) {
      const next = await trx
        .selectFrom('page_buckets')
        .select('lower_key')
        .where('list', '=', list.name)
        .where('scope', '=', scope)
        .where('lower_key', '>', lowerKey)
        .orderBy('lower_key')
        .limit(1)
        .executeTakeFirst();
      const keys = keysOfScope(trx, keyOfBucket(list, lowerKey), next ? keyOfBucket(list, next.lower_key) : null);
      const cuts = await sql<{ key: Key; position: number | string; entries: number | string }>`
        select key, position, entries from (
          select key, row_number() over (order by key) as position, count(*) over () as entries from (${keys}) as keys
        ) as numbered
        where (position - 1) % ${BUCKET_ENTRIES} = 0`.execute(trx);
      const entries = Number(cuts.rows[0]?.entries ?? 0);
      const sizeFrom = (position: number) => Math.min(BUCKET_ENTRIES, entries - position + 1);
      await trx
        .updateTable('page_buckets')
        .set({ entries: sizeFrom(1) })
        .where('list', '=', list.name)
        .where('scope', '=', scope)
        .where('lower_key', '=', lowerKey)
        .execute();
      const newBuckets = cuts.rows
        .filter((cut) => Number(cut.position) > 1)
        .map((cut) => ({ list: list.name, scope, lower_key: bucketKeyOf(list, cut.key), entries: sizeFrom(Number(cut.position)) }));
      for (let start = 0; start < newBuckets.length; start += 500) await trx.insertInto('page_buckets').values(newBuckets.slice(start, start + 500)).execute();
    }
  });
}
