import { INTEGER_KEY_DIGITS, movedBetweenScopes, type BucketedList } from '../page-buckets.ts';

const keyOf = (list: BucketedList, row: string) =>
  list.keyType === 'integer' ? `printf('%0${INTEGER_KEY_DIGITS}d', ${row}.${list.keyColumn})` : `${row}.${list.keyColumn}`;

/** Adds delta to the count of the bucket that holds the row's key, in each of the row's scopes. SQLite writes one at a time: no locking needed. */
function countRow(list: BucketedList, row: 'NEW' | 'OLD', delta: 1 | -1): string {
  return list
    .scopes(row)
    .map((scope) => {
      const where = `list = '${list.name}' AND scope = ${scope}`;
      // A NULL scope (a row in none of the list's scopes) creates no bucket, and its UPDATE matches none.
      const create = delta > 0 ? `INSERT OR IGNORE INTO page_buckets (list, scope, lower_key, entries) SELECT '${list.name}', ${scope}, '', 0 WHERE ${scope} IS NOT NULL;\n` : '';
      return `${create}UPDATE page_buckets SET entries = entries + ${delta} WHERE ${where}
        AND lower_key = (SELECT max(lower_key) FROM page_buckets WHERE ${where} AND lower_key <= ${keyOf(list, row)});`;
    })
    .join('\n');
}

/** The triggers that keep the list's page_buckets counts (src/db/page-buckets.ts), replacing any it had. */
export function sqlitePageBucketTriggers(list: BucketedList): string[] {
  const statements = [
    `DROP TRIGGER IF EXISTS ${list.name}_page_insert`,
    `DROP TRIGGER IF EXISTS ${list.name}_page_delete`,
    `DROP TRIGGER IF EXISTS ${list.name}_page_move`,
    `CREATE TRIGGER ${list.name}_page_insert AFTER INSERT ON ${list.table} BEGIN\n${countRow(list, 'NEW', 1)}\nEND`,
    `CREATE TRIGGER ${list.name}_page_delete AFTER DELETE ON ${list.table} BEGIN\n${countRow(list, 'OLD', -1)}\nEND`,
  ];
  if (list.scopeColumns.length > 0) {
    const moved = movedBetweenScopes(list, 'IS NOT');
    statements.push(
      `CREATE TRIGGER ${list.name}_page_move AFTER UPDATE OF ${list.scopeColumns.join(', ')} ON ${list.table} WHEN ${moved} BEGIN\n${countRow(list, 'OLD', -1)}\n${countRow(list, 'NEW', 1)}\nEND`,
    );
  }
  return statements;
}
