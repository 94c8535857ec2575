import { INTEGER_KEY_DIGITS, type BucketedList } from '../page-buckets.ts';

/**
 * Adds p_delta to the bucket that holds p_key. The bucket's row is locked, then looked up
 * again in a fresh snapshot (each statement of a PL/pgSQL function in READ COMMITTED takes
 * one): a cut of that bucket (page-buckets.ts), which holds the same lock, either ended before
 * (and the look-up finds the new bucket, locked in turn) or waits until this transaction ends
 * (and then counts its key). So the key is counted once, in its bucket.
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

const keyOf = (list: BucketedList, row: string) =>
  list.keyType === 'integer' ? `lpad(${row}.${list.keyColumn}::text, ${INTEGER_KEY_DIGITS}, '0')` : `${row}.${list.keyColumn}`;

const countRow = (list: BucketedList, row: 'NEW' | 'OLD', delta: 1 | -1) =>
  list
    .scopes(row)
    .map((scope) => `PERFORM page_bucket_add('${list.name}', ${scope}, ${keyOf(list, row)}, ${delta});`)
    .join('\n    ');

/** The function and trigger that keep the list's page_buckets counts (src/db/page-buckets.ts). */
export function postgresPageBucketTriggers(list: BucketedList): string[] {
  const unmoved = list.scopeColumns.map((column) => `OLD.${column} IS NOT DISTINCT FROM NEW.${column}`).join(' AND ');
  const events = list.scopeColumns.length > 0 ? `INSERT OR DELETE OR UPDATE OF ${list.scopeColumns.join(', ')}` : 'INSERT OR DELETE';
  return [
    PAGE_BUCKET_ADD,
    `CREATE FUNCTION ${list.name}_page_buckets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ${unmoved ? `IF TG_OP = 'UPDATE' AND ${unmoved} THEN RETURN NULL; END IF;` : ''}
  IF TG_OP <> 'INSERT' THEN
    ${countRow(list, 'OLD', -1)}
  END IF;
  IF TG_OP <> 'DELETE' THEN
    ${countRow(list, 'NEW', 1)}
  END IF;
  RETURN NULL;
END $$`,
    `CREATE TRIGGER ${list.name}_page_buckets AFTER ${events} ON ${list.table} FOR EACH ROW EXECUTE FUNCTION ${list.name}_page_buckets()`,
  ];
}
