import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type SqliteDialectConfig } from 'kysely';
import { checkpointInBackground } from './sqlite-checkpointer.ts';
import { cacheStatements } from './sqlite-statement-cache.ts';
import type { DialectStrategy } from './strategy.ts';

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

class ImmediateTransactionsDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver() {
    return new ImmediateTransactionsDriver(this.#config);
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
    createDialect() {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      const database = new SQLite(file);
      database.pragma('journal_mode = WAL');
      database.pragma('synchronous = NORMAL');
      database.pragma('foreign_keys = ON');
      database.pragma('busy_timeout = 5000');
      database.pragma(`mmap_size = ${MAPPED_BYTES}`);
      cacheStatements(database);
      checkpointInBackground(database, file);
      return new ImmediateTransactionsDialect({ database });
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
