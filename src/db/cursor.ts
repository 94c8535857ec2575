import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * The rows strictly after a cursor's key in a list's order: `(a, b) > (x, y)` for ascending
 * keys, `<` for descending ones. A row-value comparison over the columns of an index that
 * starts with them (after any equality filters) is a range seek on both databases, so a page
 * deep in the list costs what the first one does. Columns are trusted names, never input.
 */
export function afterKey(columns: readonly string[], key: readonly (string | number)[], direction: 'asc' | 'desc' = 'asc'): RawBuilder<SqlBool> {
  if (columns.length !== key.length || columns.length === 0) throw new Error(`afterKey: ${columns.length} columns for a key of ${key.length}`);
  const operator = sql.raw(direction === 'asc' ? '>' : '<');
  if (columns.length === 1) return sql<SqlBool>`${sql.ref(columns[0]!)} ${operator} ${key[0]}`;
  return sql<SqlBool>`(${sql.join(columns.map((column) => sql.ref(column)))}) ${operator} (${sql.join(key.map((value) => sql`${value}`))})`;
}
