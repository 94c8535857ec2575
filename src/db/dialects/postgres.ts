import pg from 'pg';
import { sql } from 'kysely';
import { CurrentSchemaPostgresDialect } from './postgres-introspector.ts';
import type { DialectStrategy } from './strategy.ts';

const INT8_OID = 20;

export interface PostgresOptions {
  connectionString: string;
  /** Schema to work in (tests give each test its own); default: the server's search_path. */
  schema?: string;
  poolSize?: number;
}

export function postgresStrategy(options: PostgresOptions): DialectStrategy {
  let pool: pg.Pool | undefined;
  return {
    name: 'postgres',
    binaryType: 'bytea',
    idType: 'bigint',
    // A poll's status events commit with its update, so a poll needs a transaction; sharing it
    // among the polls of one event-loop turn costs one commit (fsync) per batch.
    writeGrouping: { kind: 'batch', maxSize: 64 },
    relaxCommitDurability: async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
    },
    // NO KEY UPDATE: the rows' keys do not change, and a plain FOR UPDATE on an OKM would block
    // (and deadlock with) a transaction inserting a row that references it (a delivery failure).
    skipRowsClaimedByOthers: (query) => query.forNoKeyUpdate().skipLocked(),
    createDialect() {
      pool = new pg.Pool({
        connectionString: options.connectionString,
        max: options.poolSize ?? 10,
        ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
        // Epoch-millisecond bigints fit a JS number; pg would return them as strings.
        types: {
          getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
            oid === INT8_OID && format !== 'binary' ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
        },
      });
      return new CurrentSchemaPostgresDialect({ pool });
    },
    poolState: () => pool && { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    async migrationTableSchema(db) {
      const result = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
      return result.rows[0]?.schema;
    },
    autoIncrementPrimaryKey: (column) => column.primaryKey().generatedByDefaultAsIdentity(),
  };
}
