import pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { sql, type PostgresPool, type PostgresPoolClient } from 'kysely';
import { precompiledStatementName } from '../precompiled-query.ts';
import { CurrentSchemaPostgresDialect } from './postgres-introspector.ts';
import type { DialectStrategy, RowSetColumn } from './strategy.ts';

const INT8_OID = 20;

/**
 * Bounds on waiting for the database, so that an outage fails a request rather than holding
 * it: opening a connection, or waiting for a pooled one, gives up after CONNECT_TIMEOUT_MS; the
 * server cancels a statement after STATEMENT_TIMEOUT_MS (a lock wait included); a statement the
 * server never answers (a network partition, a failover that leaves the old address silent)
 * fails after QUERY_TIMEOUT_MS. DATABASE_URL may override the last two
 * (`?statement_timeout=…&query_timeout=…`, in ms), e.g. for a migration of a large table.
 */
export const CONNECT_TIMEOUT_MS = 5_000;
export const STATEMENT_TIMEOUT_MS = 30_000;
export const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 5_000;
/** TCP keepalive on idle connections, so that a peer gone without a word is noticed. */
const KEEPALIVE_DELAY_MS = 10_000;

export interface PostgresOptions {
  connectionString: string;
  /** Schema to work in (tests give each test its own); default: the server's search_path. */
  schema?: string;
  poolSize?: number;
}

/** What a statement that the server has not answered within the read timeout fails with (src/db/connection-errors.ts). */
const QUERY_READ_TIMEOUT = 'Query read timeout';

/**
 * What DATABASE_URL says, read by node-postgres's own parser, as node-postgres would read it,
 * except its `query_timeout`: keyfleet times its statements out itself (queryWithin), after
 * that many milliseconds, else QUERY_TIMEOUT_MS.
 */
export function connectionSettings(connectionString: string): { fromUrl: pg.PoolConfig; readTimeoutMs: number } {
  const { query_timeout: readTimeout, ...fromUrl } = parseConnectionString(connectionString);
  // The parser's values are node-postgres's configuration, strings where it takes numbers, as
  // node-postgres merges them itself when given the URL.
  return { fromUrl: fromUrl as pg.PoolConfig, readTimeoutMs: readTimeout === undefined ? QUERY_TIMEOUT_MS : Number(readTimeout) };
}

/**
 * Runs a statement on `client`, failing with QUERY_READ_TIMEOUT if the server has not answered
 * within `readTimeoutMs`; answers `answerOf` its result (the result itself unless given). The
 * query is given its callback when built. node-postgres's own `query_timeout`, and its promise
 * for a query given no callback, both set the callback after building the query, to a closure
 * whose scope holds the query: under a steady load, that kept every batch's query, rows and
 * parameters alive past the young generation's next collections, copied and then promoted
 * (3.3 MB at each scavenge, docs/adr/0113).
 */
function queryWithin(
  client: pg.ClientBase,
  config: pg.QueryConfig | pg.QueryArrayConfig,
  readTimeoutMs: number,
  onReadTimeout?: (error: Error) => void,
  answerOf: (result: pg.QueryResult) => unknown = (result) => result,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const error = new Error(QUERY_READ_TIMEOUT);
      onReadTimeout?.(error);
      reject(error);
    }, readTimeoutMs);
    client.query(config, (error: Error | undefined, result: pg.QueryResult) => {
      clearTimeout(timer);
      if (error) reject(error);
      else {
        try {
          resolve(answerOf(result));
        } catch (failure) {
          reject(failure as Error);
        }
      }
    });
  });
}

/** Each precompiled statement's column names, by statement name, as the first execution described them. */
const columnNamesByStatement = new Map<string, readonly string[]>();

/**
 * The rows of a precompiled statement, fetched as arrays, as objects keyed by its column names
 * (as node-postgres makes them). node-postgres makes each row by copying an empty row of the
 * statement's columns and storing each value: both at sites shared by every statement, so V8
 * copies generically, a property at a time (the poll's 26 columns: about 11 k instructions a
 * poll of keyfleet's ~300 k, docs/adr/0115). Here each row is built from the statement's own
 * names, kept from its first execution; an execution that describes other columns replaces them.
 */
function objectRows(statement: string, result: pg.QueryResult<unknown[]>): Record<string, unknown>[] {
  const { fields, rows } = result;
  let names = columnNamesByStatement.get(statement);
  if (names === undefined || names.length !== fields.length || fields.some((field, index) => field.name !== names![index])) {
    names = fields.map((field) => field.name);
    columnNamesByStatement.set(statement, names);
  }
  const objects: Record<string, unknown>[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const values = rows[index]!;
    const row: Record<string, unknown> = {};
    for (let column = 0; column < names.length; column++) row[names[column]!] = values[column];
    objects[index] = row;
  }
  return objects;
}

/**
 * The pool as Kysely uses it, except that a connection one of whose statements timed out on
 * the client side is closed rather than reused: it may wait for an answer that never comes,
 * and every statement queued behind it would time out in turn; and that the config poll's
 * precompiled queries are prepared once per connection (named statements), not parsed and
 * planned on every execution, their rows made by objectRows.
 */
function closingTimedOutConnections(pool: pg.Pool, readTimeoutMs: number): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect();
      let timedOut: Error | undefined;
      const onReadTimeout = (error: Error) => void (timedOut = error);
      const query = ((text: string, values: unknown[]): Promise<unknown> => {
        const name = precompiledStatementName(text);
        if (name === undefined) return queryWithin(client, { text, values }, readTimeoutMs, onReadTimeout);
        return queryWithin(client, { name, text, values, rowMode: 'array' }, readTimeoutMs, onReadTimeout, (result) => ({
          command: result.command,
          rowCount: result.rowCount,
          rows: objectRows(name, result as pg.QueryResult<unknown[]>),
        }));
      }) as PostgresPoolClient['query'];
      // pg-pool closes a client released with an error instead of keeping it.
      return { query, release: () => client.release(timedOut) };
    },
    end: () => pool.end(),
  };
}

/**
 * The session settings of every keyfleet connection, run on each new connection before it is
 * handed out; a connection that fails here (lost, timed out) is not used, and a
 * PostgreSQL-compatible server that refuses a setting answers with an error of its own and
 * keeps its own:
 * - `jit = off`: keyfleet's statements are short; PostgreSQL compiles one with JIT when its
 *   estimated cost is high, which for them means a misestimate (a table not analyzed yet) or a
 *   deep list page, and the compilation then costs more than the statement (docs/adr/0015);
 * - `plan_cache_mode = force_generic_plan`: only the precompiled queries are prepared
 *   statements, each of a fixed shape. Left to choose, PostgreSQL planned the poll's batch
 *   statement again on every execution when batches held one poll (a realistic load), since
 *   a plan for one row is estimated cheaper than the generic one: 580 against 200 µs of its
 *   CPU a statement (docs/adr/0106).
 */
const SESSION_SETTINGS = ['SET jit = off', 'SET plan_cache_mode = force_generic_plan'];

async function withSessionSettings(client: pg.ClientBase, readTimeoutMs: number): Promise<void> {
  for (const setting of SESSION_SETTINGS) {
    try {
      await queryWithin(client, { text: setting }, readTimeoutMs);
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) throw error;
    }
  }
}

export function postgresStrategy(options: PostgresOptions): DialectStrategy {
  let pool: pg.Pool | undefined;
  const { fromUrl, readTimeoutMs } = connectionSettings(options.connectionString);
  const connectionLostListeners = new Set<(error: Error) => void>();
  return {
    name: 'postgres',
    binaryType: 'bytea',
    idType: 'bigint',
    // A poll's status events commit with its update, so a poll needs a transaction; sharing it
    // among the polls of one event-loop turn costs one commit (fsync) per batch. One batch at a
    // time: a batch's round trips and commit cost about the same for few polls or many, and a
    // second batch beside the first only made each smaller (docs/adr/0120).
    writeGrouping: { kind: 'batch', maxSize: 64, batchesAtOnce: 1 },
    relaxCommitDurability: async (trx) => {
      await sql`set local synchronous_commit = off`.execute(trx);
    },
    // NO KEY UPDATE: the rows' keys do not change, and a plain FOR UPDATE on an OKM would block
    // (and deadlock with) a transaction inserting a row that references it (a delivery failure).
    skipRowsClaimedByOthers: (query) => query.forNoKeyUpdate().skipLocked(),
    // ORDER BY runs before the locking clause, so the rows are locked in the query's order.
    lockRowsInOrder: (query) => query.forNoKeyUpdate(),
    writesInWith: true,
    rowSet: <Row, Alias extends string>(alias: Alias, columns: readonly RowSetColumn[]) =>
      sql<Row>`unnest(${sql.join(columns.map(({ values, type }) => sql`${values}::${sql.raw(type)}[]`))})`.as<Alias>(
        sql`${sql.table(alias)}(${sql.join(columns.map(({ name }) => sql.id(name)))})`,
      ),
    createDialect() {
      pool = new pg.Pool({
        max: options.poolSize ?? 10,
        application_name: 'keyfleet',
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        statement_timeout: STATEMENT_TIMEOUT_MS,
        keepAlive: true,
        keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
        ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
        onConnect: (client) => withSessionSettings(client, readTimeoutMs),
        // Epoch-millisecond bigints fit a JS number; pg would return them as strings.
        types: {
          getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
            oid === INT8_OID && format !== 'binary' ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
        },
        // What DATABASE_URL says overrides the above, as where node-postgres reads the URL itself.
        ...fromUrl,
      });
      // A connection that the server ends (restart, failover, idle_session_timeout,
      // pg_terminate_backend) or that breaks emits 'error' on its client, in use or idle, and an
      // idle one on the pool too; unheard, either would end the process. A query that was running
      // fails with the error; the pool drops the connection and the next query opens a new one.
      pool.on('connect', (client) => {
        client.on('error', (error) => {
          for (const listener of connectionLostListeners) listener(error);
        });
      });
      pool.on('error', () => {
        // Reported by the client's own listener above.
      });
      return new CurrentSchemaPostgresDialect({ pool: closingTimedOutConnections(pool, readTimeoutMs) });
    },
    onConnectionLost: (listener) => void connectionLostListeners.add(listener),
    poolState: () => pool && { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    async migrationTableSchema(db) {
      const result = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
      return result.rows[0]?.schema;
    },
    autoIncrementPrimaryKey: (column) => column.primaryKey().generatedByDefaultAsIdentity(),
  };
}
