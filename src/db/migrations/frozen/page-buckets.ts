import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { AnyDb, MigrationContext } from '../migration-context.ts';

/**
 * FROZEN. The page-bucket triggers of both dialects and the recount of a list, copied from
 * src/db/page-buckets.ts and src/db/dialects/{sqlite,postgres}-page-buckets.ts (trimmed to what
 * migrations 0014 to 0022 use) for use by those migrations only. Never edit it: the databases
 * those migrations built have the triggers and functions it generates, and a database migrated
 * later must get exactly the same statements. A change to the page buckets is a new migration
 * with SQL of its own.
 *
 * Migrations 0014, 0018, 0020, 0021 and 0022 all run this one generator, each re-creating the
 * triggers of its lists, so a database migrated from scratch gets these same triggers from each.
 *
 * Each list's keys are cut, per scope, into buckets of consecutive keys: `page_buckets` holds
 * each bucket's lowest key and how many entries it holds. SQLite's triggers update the bucket a
 * key falls in; PostgreSQL's append +1/-1 per key and scope to `page_bucket_deltas`.
 */

/** A cut bucket holds this many entries. */
const BUCKET_ENTRIES = 1000;
/** A bucket past this many entries is cut. */
export const MAX_BUCKET_ENTRIES = 2 * BUCKET_ENTRIES;
/** Keys walked by one step of a cut. */
const KEYS_CUT_PER_STEP = 20 * BUCKET_ENTRIES;

const INTEGER_KEY_DIGITS = 20;

/** How a list's keys are stored and ordered, which the triggers and the recount agree on. */
export interface BucketedList {
  /** `page_buckets.list`. */
  name: string;
  table: string;
  /** The column the list is ordered by, unique in a scope. */
  keyColumn: string;
  /** Integer keys are kept as zero-padded text in page_buckets, so that text order is number order. */
  keyType: 'text' | 'integer';
  /** The scopes a row is counted in, as SQL over the row (NEW or OLD in a trigger, the table itself elsewhere). */
  scopes: (row: string) => string[];
  /** Columns whose change moves a row from one scope to another. */
  scopeColumns: string[];
  /** The rows counted in a scope (a value of `scopes`), as a condition on the table. */
  scopeCondition: (scope: string) => RawBuilder<SqlBool>;
}

type Key = string | number;

/** The condition of a move trigger: a scope of the row changed (the scopes compared, not the columns). */
const movedBetweenScopes = (list: BucketedList, distinct: 'IS NOT' | 'IS DISTINCT FROM') => {
  const after = list.scopes('NEW');
  return list
    .scopes('OLD')
    .map((before, index) => `(${before}) ${distinct} (${after[index]})`)
    .join(' OR ');
};

/** The statements that create the triggers keeping a list's page_buckets counts, replacing any it had. */
export function pageBucketTriggers(context: MigrationContext, list: BucketedList): string[] {
  return context.kind === 'postgres' ? postgresPageBucketTriggers(list) : sqlitePageBucketTriggers(list);
}

// SQLite: each row's trigger updates the bucket its key falls in, in each of its scopes.

const sqliteKeyOf = (list: BucketedList, row: string) =>
  list.keyType === 'integer' ? `printf('%0${INTEGER_KEY_DIGITS}d', ${row}.${list.keyColumn})` : `${row}.${list.keyColumn}`;

function sqliteCountRow(list: BucketedList, row: 'NEW' | 'OLD', delta: 1 | -1): string {
  return list
    .scopes(row)
    .map((scope) => {
      const where = `list = '${list.name}' AND scope = ${scope}`;
      // A NULL scope (a row in none of the list's scopes) creates no bucket, and its UPDATE matches none.
      const create = delta > 0 ? `INSERT OR IGNORE INTO page_buckets (list, scope, lower_key, entries) SELECT '${list.name}', ${scope}, '', 0 WHERE ${scope} IS NOT NULL;\n` : '';
      return `${create}UPDATE page_buckets SET entries = entries + ${delta} WHERE ${where}
        AND lower_key = (SELECT max(lower_key) FROM page_buckets WHERE ${where} AND lower_key <= ${sqliteKeyOf(list, row)});`;
    })
    .join('\n');
}

function sqlitePageBucketTriggers(list: BucketedList): string[] {
  const statements = [
    `DROP TRIGGER IF EXISTS ${list.name}_page_insert`,
    `DROP TRIGGER IF EXISTS ${list.name}_page_delete`,
    `DROP TRIGGER IF EXISTS ${list.name}_page_move`,
    `CREATE TRIGGER ${list.name}_page_insert AFTER INSERT ON ${list.table} BEGIN\n${sqliteCountRow(list, 'NEW', 1)}\nEND`,
    `CREATE TRIGGER ${list.name}_page_delete AFTER DELETE ON ${list.table} BEGIN\n${sqliteCountRow(list, 'OLD', -1)}\nEND`,
  ];
  if (list.scopeColumns.length > 0) {
    const moved = movedBetweenScopes(list, 'IS NOT');
    statements.push(
      `CREATE TRIGGER ${list.name}_page_move AFTER UPDATE OF ${list.scopeColumns.join(', ')} ON ${list.table} WHEN ${moved} BEGIN\n${sqliteCountRow(list, 'OLD', -1)}\n${sqliteCountRow(list, 'NEW', 1)}\nEND`,
    );
  }
  return statements;
}

// PostgreSQL: inserts and deletes append their deltas once per statement, from its transition
// table; a row moved between scopes by a row trigger.

/**
 * The table the triggers append to, created with them (IF NOT EXISTS): on PostgreSQL migration
 * 0014 creates these triggers already, before migration 0020 (which creates the table on
 * SQLite, where no trigger appends to it).
 */
const PAGE_BUCKET_DELTAS = [
  `CREATE TABLE IF NOT EXISTS page_bucket_deltas (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, list text NOT NULL, scope text NOT NULL, key text NOT NULL, entries integer NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS page_bucket_deltas_key_idx ON page_bucket_deltas (list, scope, key)`,
];

/** The functions of triggers that locked and updated the buckets in place, dropped wherever they exist. */
const DROP_IN_PLACE_FUNCTIONS = [
  `DROP FUNCTION IF EXISTS page_bucket_add(text, text, text, bigint)`,
  `DROP FUNCTION IF EXISTS page_buckets_add_keys(text, text[], text[], bigint)`,
  `DROP FUNCTION IF EXISTS page_bucket_shares(text, text[], text[])`,
];

const postgresKeyOf = (list: BucketedList, row: string) =>
  list.keyType === 'integer' ? `lpad(${row}.${list.keyColumn}::text, ${INTEGER_KEY_DIGITS}, '0')` : `${row}.${list.keyColumn}`;

/** The keys of `rows` (a transition table, or NEW or OLD) in each of their scopes, as a query of (scope, key); none for a NULL scope. */
const keysOf = (list: BucketedList, rows: string, from: string) =>
  `SELECT scope, key FROM (${list
    .scopes(rows)
    .map((scope) => `SELECT ${scope} AS scope, ${postgresKeyOf(list, rows)} AS key${from}`)
    .join(' UNION ALL ')}) AS scoped WHERE scope IS NOT NULL`;

/** Creates the first bucket ('' lower key) of the scopes that have none, looked for first by a plain read. */
const createFirstBuckets = (list: BucketedList, keys: string) =>
  `INSERT INTO page_buckets (list, scope, lower_key, entries)
    SELECT DISTINCT '${list.name}', keys.scope, '', 0 FROM (${keys}) AS keys
    WHERE NOT EXISTS (SELECT 1 FROM page_buckets b WHERE b.list = '${list.name}' AND b.scope = keys.scope AND b.lower_key = '')
    ORDER BY 2 ON CONFLICT DO NOTHING;`;

const appendDeltas = (list: BucketedList, keys: string, delta: 1 | -1) =>
  `INSERT INTO page_bucket_deltas (list, scope, key, entries) SELECT '${list.name}', keys.scope, keys.key, ${delta} FROM (${keys}) AS keys;`;

function postgresPageBucketTriggers(list: BucketedList): string[] {
  const statements = [...PAGE_BUCKET_DELTAS, `DROP TRIGGER IF EXISTS ${list.name}_page_buckets ON ${list.table}`, `DROP FUNCTION IF EXISTS ${list.name}_page_buckets()`];
  for (const [event, rows, delta] of [
    ['INSERT', 'new_rows', 1],
    ['DELETE', 'old_rows', -1],
  ] as const) {
    const name = `${list.name}_page_buckets_${event.toLowerCase()}`;
    const keys = keysOf(list, rows, ` FROM ${rows}`);
    statements.push(
      `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${delta > 0 ? createFirstBuckets(list, keys) : ''}
  ${appendDeltas(list, keys, delta)}
  RETURN NULL;
END $$`,
      `DROP TRIGGER IF EXISTS ${name} ON ${list.table}`,
      `CREATE TRIGGER ${name} AFTER ${event} ON ${list.table} REFERENCING ${rows === 'new_rows' ? 'NEW' : 'OLD'} TABLE AS ${rows} FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`,
    );
  }
  if (list.scopeColumns.length > 0) {
    const name = `${list.name}_page_buckets_move`;
    const moved = movedBetweenScopes(list, 'IS DISTINCT FROM');
    const newKeys = keysOf(list, 'NEW', '');
    statements.push(
      `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${createFirstBuckets(list, newKeys)}
  ${appendDeltas(list, keysOf(list, 'OLD', ''), -1)}
  ${appendDeltas(list, newKeys, 1)}
  RETURN NULL;
END $$`,
      `DROP TRIGGER IF EXISTS ${name} ON ${list.table}`,
      `CREATE TRIGGER ${name} AFTER UPDATE OF ${list.scopeColumns.join(', ')} ON ${list.table} FOR EACH ROW WHEN (${moved}) EXECUTE FUNCTION ${name}()`,
    );
  }
  return [...statements, ...DROP_IN_PLACE_FUNCTIONS];
}

// The recount, for the rows a migration finds stored.

/** A key as page_buckets stores it (see BucketedList.keyType). */
function bucketKeyOf(list: BucketedList, key: Key): string {
  return list.keyType === 'integer' ? String(key).padStart(INTEGER_KEY_DIGITS, '0') : String(key);
}

/** The lowest key of a bucket back in the list's own type; '' (the first bucket's) is below every key. */
function keyOfBucket(list: BucketedList, lowerKey: string): Key | null {
  if (lowerKey === '') return null;
  return list.keyType === 'integer' ? Number(lowerKey) : lowerKey;
}

/**
 * Counts the list's entries afresh, for rows written while its triggers did not run, then cuts
 * every scope into buckets. Pending deltas of the list would be counted twice: the migrations
 * run it before any can exist, or delete them first.
 */
export async function recountPageBuckets(db: AnyDb, list: BucketedList): Promise<void> {
  await sql`DELETE FROM page_buckets WHERE list = ${list.name}`.execute(db);
  for (const scope of list.scopes(list.table)) {
    await sql`INSERT INTO page_buckets (list, scope, lower_key, entries)
      SELECT ${list.name}, scope, '', count(*) FROM (SELECT ${sql.raw(scope)} AS scope FROM ${sql.table(list.table)}) AS rows WHERE scope IS NOT NULL GROUP BY scope`.execute(db);
  }
  while ((await cutOversizedBucket(db, [list])) > 0);
}

/**
 * Cuts one step off an oversized bucket of the lists: its first KEYS_CUT_PER_STEP keys become
 * buckets of BUCKET_ENTRIES, the rest a bucket of its own (cut by a later step while still
 * oversized). Returns how many keys it walked: 0 when no bucket was oversized.
 */
async function cutOversizedBucket(trx: AnyDb, lists: readonly BucketedList[]): Promise<number> {
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
  const { scope, lower_key: lowerKey } = oversized as { scope: string; lower_key: string };
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
  const before = next ? keyOfBucket(list, next.lower_key as string) : null;
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
