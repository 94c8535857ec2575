import { sql, type ColumnDataType, type ColumnDefinitionBuilder, type RawBuilder } from 'kysely';
import type { MigrationContext } from '../migration-context.ts';

/**
 * FROZEN. What the migrations need of each dialect, copied from the dialect strategies
 * (src/db/dialects/sqlite.ts, postgres.ts) for use by migrations only. Never edit it: the
 * databases those migrations built have the columns, indexes and triggers it produced, and a
 * database migrated later must get the same. A new migration that needs something else
 * defines it itself (or in a new frozen module), and the live strategies are free to change.
 */

/** Column type of auto-incrementing ids. */
export const idType = ({ kind }: MigrationContext): ColumnDataType => (kind === 'postgres' ? 'bigint' : 'integer');

/** Column type for raw bytes. */
export const binaryType = ({ kind }: MigrationContext): ColumnDataType => (kind === 'postgres' ? 'bytea' : 'blob');

/** Modifies a column into an auto-incrementing integer primary key. */
export const autoIncrementPrimaryKey = ({ kind }: MigrationContext, column: ColumnDefinitionBuilder): ColumnDefinitionBuilder =>
  kind === 'postgres' ? column.primaryKey().generatedByDefaultAsIdentity() : column.primaryKey().autoIncrement();

/**
 * An index column whose NULLs come first in ascending order: SQLite's only order (it refuses
 * the words in an index), PostgreSQL's `NULLS FIRST`.
 */
export const nullsFirstIndexColumn = ({ kind }: MigrationContext, column: string): RawBuilder<unknown> =>
  kind === 'postgres' ? sql`${sql.ref(column)} NULLS FIRST` : sql.ref(column);

/** A trigger run after each row an INSERT, DELETE or UPDATE writes: its statements are SQL over the row (NEW, OLD), the same text on every dialect. */
export interface RowTrigger {
  name: string;
  table: string;
  event: 'INSERT' | 'DELETE' | 'UPDATE';
  /** UPDATE only: the columns whose SET fires it. */
  columns?: readonly string[];
  /** A condition over NEW and OLD: the trigger runs only where it holds. */
  when?: string;
  statements: readonly string[];
}

/** The statements that create the trigger (and, on PostgreSQL, its function). */
export function rowTrigger({ kind }: MigrationContext, { name, table, event, columns, when, statements }: RowTrigger): string[] {
  if (kind === 'postgres') {
    return [
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
${statements.map((statement) => `${statement};`).join('\n')}
RETURN NULL;
END $$`,
      `CREATE TRIGGER ${name} AFTER ${event}${columns ? ` OF ${columns.join(', ')}` : ''} ON ${table} FOR EACH ROW${when ? ` WHEN (${when})` : ''} EXECUTE FUNCTION ${name}()`,
    ];
  }
  return [
    `CREATE TRIGGER ${name} AFTER ${event}${columns ? ` OF ${columns.join(', ')}` : ''} ON ${table} FOR EACH ROW${when ? ` WHEN ${when}` : ''}
BEGIN
${statements.map((statement) => `${statement};`).join('\n')}
END`,
  ];
}
