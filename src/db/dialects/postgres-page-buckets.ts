import { INTEGER_KEY_DIGITS, type BucketedList } from '../page-buckets.ts';

/**
 * Adds p_delta to the bucket that holds p_key. The bucket's row is locked, then looked up
 * again in a fresh snapshot (each statement of a PL/pgSQL function in READ COMMITTED takes
 * one): a cut of that bucket (page-buckets.ts), which holds the same lock, either ended before
 * (and the look-up finds the new bucket, locked in turn) or waits until this transaction ends
 * (and then counts its key). So the key is counted once, in its bucket. Used by the row
 * trigger of a row moved between scopes.
 */
const PAGE_BUCKET_ADD = `CREATE OR REPLACE FUNCTION page_bucket_add(p_list text, p_scope text, p_key text, p_delta bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  bucket text;
BEGIN
  IF p_delta > 0 THEN
    INSERT INTO page_buckets (list, scope, lower_key, entries) VALUES (p_list, p_scope, '', 0) ON CONFLICT DO NOTHING;
  END IF;
  LOOP
    SELECT max(lower_key) INTO bucket FROM page_buckets WHERE list = p_list AND scope = p_scope AND lower_key <= p_key;
    EXIT WHEN bucket IS NULL;
    PERFORM 1 FROM page_buckets WHERE list = p_list AND scope = p_scope AND lower_key = bucket FOR UPDATE;
    EXIT WHEN bucket = (SELECT max(lower_key) FROM page_buckets WHERE list = p_list AND scope = p_scope AND lower_key <= p_key);
  END LOOP;
  UPDATE page_buckets SET entries = entries + p_delta WHERE list = p_list AND scope = p_scope AND lower_key = bucket;
END $$`;

/**
 * How many of the keys (p_keys[i] in scope p_scopes[i]) fall in each bucket: one sort of the
 * keys with the scopes' bucket bounds, each key in the last bucket at or below it, rather than
 * one index look-up per key (a statement may store tens of thousands).
 */
const PAGE_BUCKET_SHARES = `CREATE OR REPLACE FUNCTION page_bucket_shares(p_list text, p_scopes text[], p_keys text[])
RETURNS TABLE (scope text, lower_key text, entries bigint) LANGUAGE sql STABLE AS $$
  SELECT placed.scope, placed.bucket, count(*) FROM (
    SELECT marks.scope, marks.is_key,
      max(CASE WHEN NOT marks.is_key THEN marks.key END) OVER (PARTITION BY marks.scope ORDER BY marks.key, marks.is_key ROWS UNBOUNDED PRECEDING) AS bucket
    FROM (
      SELECT k.scope, k.key, true AS is_key FROM unnest(p_scopes, p_keys) AS k(scope, key)
      UNION ALL
      SELECT b.scope, b.lower_key, false FROM page_buckets b
      WHERE b.list = p_list AND b.scope IN (SELECT DISTINCT s FROM unnest(p_scopes) AS s)
    ) AS marks
  ) AS placed
  WHERE placed.is_key AND placed.bucket IS NOT NULL
  GROUP BY placed.scope, placed.bucket
$$`;

/**
 * Adds p_delta for each key to the bucket that holds it: page_bucket_add for a whole
 * statement's rows. The buckets are locked in key order, then the keys placed again in a fresh
 * snapshot; while a cut (which holds its bucket's lock) has moved keys into buckets not locked
 * yet, those are locked too, as page_bucket_add does for one key. Then one UPDATE adds each
 * bucket's share. Those later locks break the key order, so they do not wait (NOWAIT): had they
 * waited, two statements could each hold a bucket the other waits for, which PostgreSQL detects
 * only after deadlock_timeout (seen: concurrent enrolments of 100 000 new OKMs while the keeper
 * cut their buckets). A bucket taken fails the statement with lock_not_available (55P03), and
 * the caller's transaction is run again (write-batcher.ts).
 */
const PAGE_BUCKETS_ADD_KEYS = `CREATE OR REPLACE FUNCTION page_buckets_add_keys(p_list text, p_scopes text[], p_keys text[], p_delta bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  locked text[] := '{}';
  new_scopes text[];
  new_keys text[];
BEGIN
  IF p_keys IS NULL THEN
    RETURN;
  END IF;
  IF p_delta > 0 THEN
    INSERT INTO page_buckets (list, scope, lower_key, entries)
      SELECT DISTINCT p_list, s, '', 0 FROM unnest(p_scopes) AS s ORDER BY 2 ON CONFLICT DO NOTHING;
  END IF;
  LOOP
    SELECT array_agg(shares.scope ORDER BY shares.scope, shares.lower_key), array_agg(shares.lower_key ORDER BY shares.scope, shares.lower_key)
      INTO new_scopes, new_keys
      FROM page_bucket_shares(p_list, p_scopes, p_keys) AS shares
      WHERE NOT (shares.scope || E'\\n' || shares.lower_key = ANY (locked));
    EXIT WHEN new_scopes IS NULL;
    IF cardinality(locked) = 0 THEN
      PERFORM 1 FROM page_buckets b JOIN unnest(new_scopes, new_keys) AS n(scope, lower_key) ON b.scope = n.scope AND b.lower_key = n.lower_key
        WHERE b.list = p_list ORDER BY b.scope, b.lower_key FOR UPDATE OF b;
    ELSE
      PERFORM 1 FROM page_buckets b JOIN unnest(new_scopes, new_keys) AS n(scope, lower_key) ON b.scope = n.scope AND b.lower_key = n.lower_key
        WHERE b.list = p_list ORDER BY b.scope, b.lower_key FOR UPDATE OF b NOWAIT;
    END IF;
    locked := locked || ARRAY(SELECT n.scope || E'\\n' || n.lower_key FROM unnest(new_scopes, new_keys) AS n(scope, lower_key));
  END LOOP;
  UPDATE page_buckets b SET entries = b.entries + p_delta * shares.entries
    FROM page_bucket_shares(p_list, p_scopes, p_keys) AS shares
    WHERE b.list = p_list AND b.scope = shares.scope AND b.lower_key = shares.lower_key;
END $$`;

const keyOf = (list: BucketedList, row: string) =>
  list.keyType === 'integer' ? `lpad(${row}.${list.keyColumn}::text, ${INTEGER_KEY_DIGITS}, '0')` : `${row}.${list.keyColumn}`;

const countRow = (list: BucketedList, row: 'NEW' | 'OLD', delta: 1 | -1) =>
  list
    .scopes(row)
    .map((scope) => `PERFORM page_bucket_add('${list.name}', ${scope}, ${keyOf(list, row)}, ${delta});`)
    .join('\n    ');

/** Counts every row of a statement's transition table (`rows`) in each of its scopes. */
const countRows = (list: BucketedList, rows: string, delta: 1 | -1) => {
  const keys = list
    .scopes(rows)
    .map((scope) => `SELECT ${scope} AS scope, ${keyOf(list, rows)} AS key FROM ${rows}`)
    .join(' UNION ALL ');
  return `PERFORM page_buckets_add_keys('${list.name}', array_agg(keys.scope), array_agg(keys.key), ${delta}) FROM (${keys}) AS keys;`;
};

/**
 * The functions and triggers that keep the list's page_buckets counts (src/db/page-buckets.ts),
 * replacing any it had. Inserts and deletes are counted once per statement, from its transition
 * table (a row trigger's PL/pgSQL call per row made a bulk insert of 1 M OKMs take tens of
 * minutes, and a device's backlog of 60 000 audit records minutes); a row moved between scopes
 * (an UPDATE OF the scope columns, which cannot have a transition table with a column list
 * and must not fire on a poll's update) is counted by a row trigger.
 */
export function postgresPageBucketTriggers(list: BucketedList): string[] {
  const statements = [
    PAGE_BUCKET_ADD,
    PAGE_BUCKET_SHARES,
    PAGE_BUCKETS_ADD_KEYS,
    `DROP TRIGGER IF EXISTS ${list.name}_page_buckets ON ${list.table}`,
    `DROP FUNCTION IF EXISTS ${list.name}_page_buckets()`,
  ];
  for (const [event, rows, delta] of [
    ['INSERT', 'new_rows', 1],
    ['DELETE', 'old_rows', -1],
  ] as const) {
    const name = `${list.name}_page_buckets_${event.toLowerCase()}`;
    statements.push(
      `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${countRows(list, rows, delta)}
  RETURN NULL;
END $$`,
      `DROP TRIGGER IF EXISTS ${name} ON ${list.table}`,
      `CREATE TRIGGER ${name} AFTER ${event} ON ${list.table} REFERENCING ${rows === 'new_rows' ? 'NEW' : 'OLD'} TABLE AS ${rows} FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`,
    );
  }
  if (list.scopeColumns.length > 0) {
    const name = `${list.name}_page_buckets_move`;
    const moved = list.scopeColumns.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(' OR ');
    statements.push(
      `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${countRow(list, 'OLD', -1)}
  ${countRow(list, 'NEW', 1)}
  RETURN NULL;
END $$`,
      `DROP TRIGGER IF EXISTS ${name} ON ${list.table}`,
      `CREATE TRIGGER ${name} AFTER UPDATE OF ${list.scopeColumns.join(', ')} ON ${list.table} FOR EACH ROW WHEN (${moved}) EXECUTE FUNCTION ${name}()`,
    );
  }
  return statements;
}
