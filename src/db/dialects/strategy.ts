import type { AliasedRawBuilder, ColumnDataType, ColumnDefinitionBuilder, Dialect, Kysely, SelectQueryBuilder } from 'kysely';
import type { Db } from '../database.ts';
import type { WriteGrouping } from '../write-batcher.ts';

/** A column of a row set: its name, its SQL type, and its values, one per row (an array, or a placeholder for one). */
export interface RowSetColumn {
  name: string;
  type: 'text' | 'bigint' | 'integer';
  values: unknown;
}

/**
 * A table of rows given column by column, for one statement over a batch of rows
 * (`UPDATE … FROM <row set>`, `INSERT … SELECT … FROM <row set>`). Each column is one
 * parameter whatever the number of rows, so the statement's text is the same for every batch.
 */
export type RowSet = <Row, Alias extends string>(alias: Alias, columns: readonly RowSetColumn[]) => AliasedRawBuilder<Row, Alias>;

export interface PoolState {
  total: number;
  idle: number;
  waiting: number;
}

/** How a Kysely instance wants its dialect. */
export interface DialectOptions {
  /**
   * A transaction's precompiled queries run on an in-process database directly
   * (src/db/precompiled-query.ts, docs/adr/0103), past Kysely's executor, and so past a query
   * log configured on the Kysely instance: an instance with a log leaves this off. No effect
   * where the database is another process (PostgreSQL).
   */
  directPrecompiledStatements?: boolean;
}

/** What differs between the supported databases, kept in one place per dialect. */
export interface DialectStrategy {
  readonly name: 'sqlite' | 'postgres';
  createDialect(options?: DialectOptions): Dialect;
  /** Column type for raw bytes. */
  readonly binaryType: ColumnDataType;
  /** How small writes that arrive close together (config polls) are committed. */
  readonly writeGrouping: WriteGrouping;
  /**
   * Lets the current transaction commit without waiting for its log to reach the disk, for
   * writes that a crash may lose without harm (a lost delivery outcome means the event is
   * sent again).
   */
  relaxCommitDurability(trx: Db): Promise<void>;
  /**
   * Makes the row selection of a claiming UPDATE pass over rows that another process is
   * claiming at the same moment, so that several dispatchers on one database take disjoint rows
   * without waiting for one another. The selection belongs in a materialised WITH
   * (`WITH picked AS MATERIALIZED (<query>) UPDATE … WHERE id IN (SELECT id FROM picked)`): as
   * a subquery of IN, PostgreSQL may run it again for each row it updates, and run again it
   * passes over the rows the statement has just updated and picks more, past its LIMIT.
   */
  skipRowsClaimedByOthers<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /**
   * Where a statement round trip costs more than building a set (a database over the
   * network), the row sets that let a batch of writes run as one statement each; undefined
   * where a statement per row is cheaper (SQLite is in-process and caches its prepared
   * statements), and callers run their per-row statement for each row.
   */
  readonly rowSet?: RowSet;
  /**
   * Whether a WITH clause may write (`WITH changed AS (INSERT … RETURNING …) INSERT … SELECT …
   * FROM changed`), so that a change and its audit entry are one statement: one round trip
   * where a transaction takes four (PostgreSQL). SQLite's may not, and its transactions cost
   * no round trip.
   */
  readonly writesInWith: boolean;
  /**
   * Makes a SELECT lock the rows it returns until the transaction ends, in the order it
   * returns them, as an UPDATE of them would; so that a set-based UPDATE locks its rows in a
   * known order, which a join does not promise.
   */
  lockRowsInOrder<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** Column type of auto-incrementing ids. */
  readonly idType: ColumnDataType;
  /** Modifies a column into an auto-incrementing integer primary key. */
  autoIncrementPrimaryKey(column: ColumnDefinitionBuilder): ColumnDefinitionBuilder;
  /**
   * The schema that holds Kysely's migration tables, where the database has schemas. Unless
   * told, Kysely looks for them in every schema, and would take another keyfleet schema's (a
   * parallel test's, staging beside production) for this one's.
   */
  migrationTableSchema(db: Kysely<unknown>): Promise<string | undefined>;
  /**
   * Calls `listener` when the database ends or loses a pooled connection (a restart, a
   * failover, a timeout); the pool drops it. SQLite has no such connections.
   */
  onConnectionLost?(listener: (error: Error) => void): void;
  /** The connection pool's state, where the dialect has a pool (SQLite uses one connection). */
  poolState(): PoolState | undefined;
}
