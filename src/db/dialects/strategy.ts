import type { ColumnDataType, ColumnDefinitionBuilder, Dialect } from 'kysely';

/** What differs between the supported databases, kept in one place per dialect. */
export interface DialectStrategy {
  readonly name: 'sqlite' | 'postgres';
  createDialect(): Dialect;
  /** Column type for raw bytes. */
  readonly binaryType: ColumnDataType;
  /** Column type of auto-incrementing ids. */
  readonly idType: ColumnDataType;
  /** Modifies a column into an auto-incrementing integer primary key. */
  autoIncrementPrimaryKey(column: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /** Releases what createDialect opened beyond Kysely's own destroy (files, pools). */
  close?(): Promise<void>;
}
