import pg from 'pg';
import { PostgresDialect, sql } from 'kysely';
import type { DialectStrategy } from './strategy.ts';

const INT8_OID = 20;
const INVALID_SCHEMA_NAME = '3F000';

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
      return new PostgresDialect({ pool });
    },
    poolState: () => pool && { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    async migrationTableSchema(db) {
      const result = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
      return result.rows[0]?.schema;
    },
    // Kysely's migrator lists the tables of every schema, asking has_schema_privilege of each;
    // a schema that another client drops meanwhile makes that query fail with 3F000.
    isRetryableMigrationError: (error) => (error as { code?: unknown } | null)?.code === INVALID_SCHEMA_NAME,
    autoIncrementPrimaryKey: (column) => column.primaryKey().generatedByDefaultAsIdentity(),
  };
}
