import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type QueryResult } from 'kysely';
import type { SynchronousStatements } from '../precompiled-query.ts';
import { checkpointInBackground } from './sqlite-checkpointer.ts';
import { cacheStatements } from './sqlite-statement-cache.ts';
import type { DialectOptions, DialectStrategy } from './strategy.ts';

/**
 * How much of the database file reads map instead of copying a page per read() into SQLite's
 * 2 MiB page cache. Past the cache (100 000 OKMs are ~300 MiB, 1 M ~3 GiB) each index entry a
 * poll moves was a read() as well as a WAL page: at 1 M OKMs, 132–150 → 111–126 µs of CPU per
 * poll (docs/adr/0013). SQLite caps it at its build's maximum (2 GiB). Mapped
 * pages are the OS page cache, shared and reclaimable, though they count in the RSS. Writes
 * still go through the WAL.
 */
const MAPPED_BYTES = 2 ** 31;

/**
 * Transactions begin IMMEDIATE: they take the write lock as they begin, waiting for it up to
 * busy_timeout. Begun deferred (Kysely's `begin`), a transaction that read before it wrote was
 * refused at once with "database is locked" when another process (a CLI command beside the
 * server) had committed in between: SQLite cannot wait in that case, its snapshot is stale.
 * One connection per process runs one transaction at a time anyway, so nothing waits longer.
 */
class ImmediateTransactionsDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * SQLite's adapter, which also runs a compiled statement on the database as Kysely's SQLite
 * connection does (a reader's rows; else the changes and the last row id), for the precompiled
 * queries of a transaction (src/db/precompiled-query.ts).
 */
class InProcessSqliteAdapter extends SqliteAdapter implements SynchronousStatements {
  readonly #database: SQLite.Database;
  constructor(database: SQLite.Database) {
    super();
    this.#database = database;
  }
  prepareCompiled<Row>(sql: string): (parameters: readonly unknown[]) => QueryResult<Row> {
    const statement = this.#database.prepare(sql);
    if (statement.reader) return (parameters) => ({ rows: statement.all(parameters) as Row[] });
    return (parameters) => {
      const { changes, lastInsertRowid } = statement.run(parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    };
  }
}

class ImmediateTransactionsDialect extends SqliteDialect {
  readonly #database: SQLite.Database;
  readonly #direct: boolean;
  constructor(database: SQLite.Database, { directPrecompiledStatements = false }: DialectOptions) {
    super({ database });
    this.#database = database;
    this.#direct = directPrecompiledStatements;
  }
  override createDriver() {
    return new ImmediateTransactionsDriver({ database: this.#database });
  }
  override createAdapter() {
    return this.#direct ? new InProcessSqliteAdapter(this.#database) : new SqliteAdapter();
  }
}

export function sqliteStrategy(file: string): DialectStrategy {
  return {
    name: 'sqlite',
    binaryType: 'blob',
    writesInWith: false,
    idType: 'integer',
    // One connection, one writer: a commit (WAL append) per poll cost more than the poll's own statements.
    writeGrouping: { kind: 'batch', maxSize: 64, batchesAtOnce: 1 },
    createDialect(options = {}) {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      const database = new SQLite(file);
      database.pragma('journal_mode = WAL');
      database.pragma('synchronous = NORMAL');
      database.pragma('foreign_keys = ON');
      database.pragma('busy_timeout = 5000');
      database.pragma(`mmap_size = ${MAPPED_BYTES}`);
      cacheStatements(database);
      checkpointInBackground(database, file);
      return new ImmediateTransactionsDialect(database, options);
    },
    poolState: () => undefined,
    // SQLite runs one write at a time (one per database file, across processes), so a claiming
    // UPDATE is atomic as it stands, and FOR UPDATE does not exist.
    skipRowsClaimedByOthers: (query) => query,
    lockRowsInOrder: (query) => query,
    // synchronous=NORMAL: a WAL commit does not wait for a flush already.
    relaxCommitDurability: async () => {},
    migrationTableSchema: async () => undefined,
    autoIncrementPrimaryKey: (column) => column.primaryKey().autoIncrement(),
  };
}
