import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from './database.ts';
import type { DialectStrategy } from './dialects/strategy.ts';
import type { AnyDb } from './migrate.ts';

/**
 * Where a page of a long list begins, without walking the entries before it.
 *
 * An OFFSET walks every entry it skips, even in an index (about 50 ns each on SQLite: a page
 * deep in a million takes 50 ms). So each list's keys are cut, per scope (one customer's, the
 * whole fleet's, one OKM's), into buckets of consecutive keys: `page_buckets` holds each
 * bucket's lowest key and how many entries it holds. Database triggers keep the counts on
 * every insert, delete and change of scope, whoever writes (migration 0014); a page then adds
 * up the few bucket counts before it and walks into one bucket only.
 *
 * SQLite's triggers update the bucket a key falls in (one writer at a time). PostgreSQL's only
 * append +1/-1 per key and scope to `page_bucket_deltas` (migration 0020): updating in place
 * locked each bucket until commit, and concurrent writers into the same buckets (an enrolment
 * wave) took turns. Readers add the pending deltas, each to the bucket its key falls in, in the
 * same statement; the bucket keeper of every server process (page-bucket-keeper.ts) folds them
 * into the buckets, and cuts a bucket that has grown past MAX_BUCKET_ENTRIES (new keys after
 * the last cut, a bulk load, a recount), a bounded step at a time, off the request path (see
 * keepPageBuckets); until then a page in it walks from its lowest key.
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

/**
 * The condition of a move trigger (`AFTER UPDATE OF` the scope columns): a scope of the row
 * changed. It compares the scopes rather than the columns, so that a column that only sometimes
 * changes a scope (last_sync_time, which every poll sets) moves nothing when it does not.
 */
export const movedBetweenScopes = (list: BucketedList, distinct: 'IS NOT' | 'IS DISTINCT FROM') => {
  const after = list.scopes('NEW');
  return list
    .scopes('OLD')
    .map((before, index) => `(${before}) ${distinct} (${after[index]})`)
    .join(' OR ');
};

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
 * migration's existing rows), then cuts every scope into buckets. Pending deltas would be
 * counted twice: it is for migrations (0014, 0018), which run before any delta of the list can
 * exist, and not for a running deployment.
 */
export async function recountPageBuckets(db: AnyDb, list: BucketedList): Promise<void> {
  await sql`DELETE FROM page_buckets WHERE list = ${list.name}`.execute(db);
  for (const scope of list.scopes(list.table)) {
    await sql`INSERT INTO page_buckets (list, scope, lower_key, entries)
      SELECT ${list.name}, scope, '', count(*) FROM (SELECT ${sql.raw(scope)} AS scope FROM ${sql.table(list.table)}) AS rows WHERE scope IS NOT NULL GROUP BY scope`.execute(db);
  }
  while ((await cutOversizedBucket(db as Db, [list])) > 0);
}

/** How many entries the scope holds: the sum of its bucket counts and of its pending deltas, in one snapshot. */
export async function scopeTotal(db: Db, list: BucketedList, scope: string): Promise<number> {
  const row = await sql<{ total: number | string | null }>`
    select coalesce((select sum(entries) from page_buckets where list = ${list.name} and scope = ${scope}), 0)
      + coalesce((select sum(entries) from page_bucket_deltas where list = ${list.name} and scope = ${scope}), 0) as total`.execute(db);
  return Number(row.rows[0]?.total ?? 0);
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
 * adding up the counts of the buckets before it, each with the pending deltas of its keys (the
 * scope's bucket bounds and pending keys sorted together, each key in the last bucket at or
 * below it, rather than one index look-up per key). One statement, so that a fold or cut that
 * commits meanwhile is seen whole or not at all. A read writes nothing: in a bucket not cut
 * yet, the page is walked to from its lowest key (as an OFFSET would, once, until the keeper
 * gets to it), which costs far less than cutting the bucket would on the request path.
 */
export async function pagePosition(db: Db, list: BucketedList, scope: string, offset: number): Promise<PagePosition> {
  const bucket = await sql<{ lower_key: string; start: number | string; total: number | string }>`
    select lower_key, start, total from (
      select lower_key,
        sum(entries) over (order by lower_key) - entries as start,
        sum(entries) over () as total
      from (
        select lower_key, sum(entries) as entries from (
          select entries, max(case when is_bucket = 1 then key end) over (order by key, is_bucket desc rows unbounded preceding) as lower_key
          from (
            select lower_key as key, 1 as is_bucket, entries from page_buckets where list = ${list.name} and scope = ${scope}
            union all
            select key, 0, entries from page_bucket_deltas where list = ${list.name} and scope = ${scope}
          ) as marks
        ) as placed
        group by lower_key
      ) as counted
    ) as buckets
    where start <= ${offset}
    order by lower_key desc
    limit 1`.execute(db);
  const row = bucket.rows[0];
  if (row === undefined) return { from: null, skip: 0, total: 0 };
  return { from: keyOfBucket(list, row.lower_key), skip: offset - Number(row.start), total: Number(row.total) };
}

/** Keys walked by one step of a cut, in one transaction. */
export const KEYS_CUT_PER_STEP = 20 * BUCKET_ENTRIES;

/** Deltas one keeper step folds at most, in one transaction. */
export const DELTAS_PER_FOLD = 10_000;

/**
 * One step of the bucket keeper: folds up to DELTAS_PER_FOLD of the oldest pending deltas into
 * their buckets, then, if none is left, cuts one step off an oversized bucket of the lists (see
 * cutOversizedBucket). Returns how many deltas it folded and keys it walked: 0 when there was
 * nothing to do, or another process's keeper held the step.
 *
 * The step is claimed by locking the one row of page_bucket_folder, without waiting: a second
 * keeper skips (SQLite has no row locks, but one writer at a time and serializable
 * transactions: a second keeper's step runs after the first's or fails). On PostgreSQL it runs in
 * one REPEATABLE READ snapshot, which is what keeps a cut exact while writers go on: a row and
 * its delta commit together, so the cut counts from the table exactly the rows whose deltas the
 * fold has just taken, and the deltas of rows it does not see stay pending, to be placed by key
 * in the buckets the cut leaves. Hence no cut while visible deltas remain. A keeper whose
 * snapshot predates another's fold or cut fails with a serialization failure on the rows that
 * one changed, and skips its step.
 */
export async function keepPageBuckets(db: Db, dialect: DialectStrategy, lists: readonly BucketedList[]): Promise<number> {
  return inClaimedStep(db, dialect, async (trx) => {
    const folded = await foldDeltas(trx);
    return folded + (folded < DELTAS_PER_FOLD ? await cutOversizedBucket(trx, lists) : 0);
  });
}

/** One fold step of keepPageBuckets, without the cut: returns how many deltas it folded. */
export async function foldPageBucketDeltas(db: Db, dialect: DialectStrategy): Promise<number> {
  return inClaimedStep(db, dialect, foldDeltas);
}

async function inClaimedStep(db: Db, dialect: DialectStrategy, step: (trx: Db) => Promise<number>): Promise<number> {
  try {
    return await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        // Locked, not updated: a later keeper's snapshot would fail to lock an updated row.
        const claimed = await dialect.skipRowsClaimedByOthers(trx.selectFrom('page_bucket_folder').select('id')).executeTakeFirst();
        return claimed === undefined ? 0 : step(trx);
      });
  } catch (error) {
    if ((error as { code?: unknown }).code === SERIALIZATION_FAILURE) return 0;
    throw error;
  }
}

const SERIALIZATION_FAILURE = '40001';

/**
 * Adds the oldest deltas to the buckets their keys fall in and deletes them, in the caller's
 * transaction (one snapshot): readers see them pending or folded, never both.
 */
async function foldDeltas(trx: Db): Promise<number> {
  const oldest = await trx
    .selectFrom((eb) => eb.selectFrom('page_bucket_deltas').select('id').orderBy('id').limit(DELTAS_PER_FOLD).as('oldest'))
    .select((eb) => [eb.fn.min('id').as('first'), eb.fn.max('id').as('last'), eb.fn.countAll().as('taken')])
    .executeTakeFirstOrThrow();
  const taken = Number(oldest.taken);
  if (taken === 0) return 0;
  // A range, not only `id <= last`: with no statistics on the table yet (a bulk load or an
  // enrolment wave appends millions of deltas before autoanalyze runs), PostgreSQL takes an
  // open inequality to match a third of the table and scans all of it for each step (0.6-0.8 s a
  // step at 7 M deltas; with the range and without JIT, 24 ms; bench/RESULTS.md 2026-11-26).
  const [first, last] = [Number(oldest.first), Number(oldest.last)];
  await sql`update page_buckets set entries = page_buckets.entries + folded.entries
    from (
      select list, scope, lower_key, sum(entries) as entries from (
        select d.list, d.scope, d.entries,
          (select max(b.lower_key) from page_buckets b where b.list = d.list and b.scope = d.scope and b.lower_key <= d.key) as lower_key
        from page_bucket_deltas d where d.id between ${first} and ${last}
      ) as placed
      group by list, scope, lower_key
    ) as folded
    where page_buckets.list = folded.list and page_buckets.scope = folded.scope and page_buckets.lower_key = folded.lower_key`.execute(trx);
  await trx.deleteFrom('page_bucket_deltas').where('id', '>=', first).where('id', '<=', last).execute();
  return taken;
}

/**
 * Cuts one step off an oversized bucket of the lists, in the caller's transaction: its first
 * KEYS_CUT_PER_STEP keys become buckets of BUCKET_ENTRIES, the rest a bucket of its own (cut by a
 * later step while still oversized). Returns how many keys it walked: 0 when no bucket was
 * oversized. Its count is exact for the keys it walks when every delta the transaction sees is
 * folded (keepPageBuckets), or none is pending (a migration's recount).
 */
async function cutOversizedBucket(trx: Db, lists: readonly BucketedList[]): Promise<number> {
  const oversized = await trx
    .selectFrom('page_buckets')
    .select(['list', 'scope', 'lower_key', 'entries'])
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
  const { scope, lower_key: lowerKey } = oversized;
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
  // step stay one bucket, holding what the (exact) count leaves.
  const remainderAt = KEYS_CUT_PER_STEP + 1;
  const entries = walked < remainderAt ? walked : Number(oversized.entries);
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
}
