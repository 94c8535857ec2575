import { sql, type RawBuilder, type SqlBool } from 'kysely';
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
 * past MAX_BUCKET_ENTRIES (new keys after the last cut, a bulk load, a recount) is cut up by
 * the bucket keeper of every server process (page-bucket-keeper.ts), a bounded step at a
 * time, off the request path; until then a page in it walks from its lowest key.
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
  /** The rows counted in a scope (a value of `scopes`), as a condition on the table. */
  scopeCondition: (scope: string) => RawBuilder<SqlBool>;
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
 * Counts the list's entries afresh, for rows written while the triggers did not run (a
 * migration's existing rows, a bulk load), then cuts every scope into buckets.
 */
export async function recountPageBuckets(db: AnyDb, list: BucketedList): Promise<void> {
  await sql`DELETE FROM page_buckets WHERE list = ${list.name}`.execute(db);
  for (const scope of list.scopes(list.table)) {
    await sql`INSERT INTO page_buckets (list, scope, lower_key, entries)
      SELECT ${list.name}, scope, '', count(*) FROM (SELECT ${sql.raw(scope)} AS scope FROM ${sql.table(list.table)}) AS rows GROUP BY scope`.execute(db);
  }
  while ((await cutOversizedBuckets(db as Db, [list])) > 0);
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
  /** How many keys the page lies after `from`: fewer than MAX_BUCKET_ENTRIES once the keeper has cut the scope. */
  skip: number;
  /** Entries of the scope in all. */
  total: number;
}

/**
 * Where the entry at `offset` (from 0) of the scope lies: the bucket that holds it, found by
 * adding up the counts of the buckets before it. A read writes nothing: in a bucket not cut
 * yet, the page is walked to from its lowest key (as an OFFSET would, once, until the keeper
 * gets to it), which costs far less than cutting the bucket would on the request path.
 */
export async function pagePosition(db: Db, list: BucketedList, scope: string, offset: number): Promise<PagePosition> {
  const bucket = await sql<{ lower_key: string; start: number | string; total: number | string }>`
    select lower_key, start, total from (
      select lower_key,
        sum(entries) over (order by lower_key) - entries as start,
        sum(entries) over () as total
      from page_buckets where list = ${list.name} and scope = ${scope}
    ) as buckets
    where start <= ${offset}
    order by lower_key desc
    limit 1`.execute(db);
  const row = bucket.rows[0];
  if (row === undefined) return { from: null, skip: 0, total: 0 };
  return { from: keyOfBucket(list, row.lower_key), skip: offset - Number(row.start), total: Number(row.total) };
}

/** Keys walked by one step of a cut, in one transaction: what bounds how long it holds the bucket's lock. */
export const KEYS_CUT_PER_STEP = 20 * BUCKET_ENTRIES;

/**
 * One bounded step of cutting the lists' oversized buckets: the first KEYS_CUT_PER_STEP keys
 * of one bucket of more than MAX_BUCKET_ENTRIES become buckets of BUCKET_ENTRIES, the rest a
 * bucket of its own (cut by a later step while still oversized). Returns how many keys it
 * walked: 0 when no bucket was oversized (or another process had just cut the one found).
 */
export async function cutOversizedBuckets(db: Db, lists: readonly BucketedList[]): Promise<number> {
  const oversized = await db
    .selectFrom('page_buckets')
    .select(['list', 'scope', 'lower_key'])
    // A literal, as in page_buckets_oversized_idx, so that the database can use that index.
    .where('entries', '>', sql.lit(MAX_BUCKET_ENTRIES))
    .where(
      'list',
      'in',
      lists.map((list) => list.name),
    )
    .limit(1)
    .executeTakeFirst();
  if (oversized === undefined) return 0;
  const list = lists.find((candidate) => candidate.name === oversized.list)!;
  return cutBucket(db, list, oversized.scope, oversized.lower_key);
}

/**
 * Cuts one step off the bucket (see cutOversizedBuckets). Its row is locked first (a no-op
 * update, which also checks that it is still oversized once the lock is held), then its keys
 * are walked: on PostgreSQL a writer that inserted or deleted a key in it meanwhile holds that
 * lock until it commits (its trigger took it), and one that comes later waits for it and then
 * looks its bucket up again (page_bucket_add); on SQLite the transaction holds the only write
 * lock. So the count is exact for the keys walked, no entry is counted twice or missed, and of
 * two keepers (or processes) that found the same bucket, the second finds it cut and skips it.
 */
async function cutBucket(db: Db, list: BucketedList, scope: string, lowerKey: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const locked = await trx
      .updateTable('page_buckets')
      .set((eb) => ({ entries: eb.ref('entries') }))
      .where('list', '=', list.name)
      .where('scope', '=', scope)
      .where('lower_key', '=', lowerKey)
      .where('entries', '>', MAX_BUCKET_ENTRIES)
      .returning('entries')
      .executeTakeFirst();
    if (locked === undefined) return 0;
    const next = await trx
      .selectFrom('page_buckets')
      .select('lower_key')
      .where('list', '=', list.name)
      .where('scope', '=', scope)
      .where('lower_key', '>', lowerKey)
      .orderBy('lower_key')
      .limit(1)
      .executeTakeFirst();
    const key = sql.ref(list.keyColumn);
    const from = keyOfBucket(list, lowerKey);
    const before = next ? keyOfBucket(list, next.lower_key) : null;
    const keys = sql`select ${key} as key from ${sql.table(list.table)}
      where ${list.scopeCondition(scope)}${from === null ? sql`` : sql` and ${key} >= ${from}`}${before === null ? sql`` : sql` and ${key} < ${before}`}
      order by ${key} limit ${KEYS_CUT_PER_STEP + 1}`;
    const cuts = await sql<{ key: Key; position: number | string; walked: number | string }>`
      select key, position, walked from (
        select key, row_number() over (order by key) as position, count(*) over () as walked from (${keys}) as keys
      ) as numbered
      where (position - 1) % ${BUCKET_ENTRIES} = 0`.execute(trx);
    const walked = Number(cuts.rows[0]?.walked ?? 0);
    // All the bucket's keys were walked: they are counted afresh. Otherwise the keys after the
    // step stay one bucket, holding what the (exact, locked) count leaves.
    const remainderAt = KEYS_CUT_PER_STEP + 1;
    const entries = walked < remainderAt ? walked : Number(locked.entries);
    const sizeFrom = (position: number) => (position === remainderAt ? entries - KEYS_CUT_PER_STEP : Math.min(BUCKET_ENTRIES, entries - position + 1));
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
    if (newBuckets.length > 0) await trx.insertInto('page_buckets').values(newBuckets).execute();
    return walked;
  });
}
