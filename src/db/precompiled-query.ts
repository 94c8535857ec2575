import type { CompiledQuery, Compilable, QueryResult } from 'kysely';
import type { Db } from './database.ts';

/**
 * A dialect adapter whose database runs a statement in-process and synchronously (SQLite's):
 * it runs a compiled query on the connection and answers as the dialect's driver would.
 */
export interface SynchronousStatements {
  /** The statement of `sql`, prepared once: runs it with the parameters given, and answers as the dialect's driver would. */
  prepareCompiled<Row>(sql: string): (parameters: readonly unknown[]) => QueryResult<Row>;
}

const runsSynchronously = (adapter: object): adapter is SynchronousStatements => 'prepareCompiled' in adapter;

/** Stands for the value at `index` of an execution's arguments. */
class Placeholder {
  constructor(readonly index: number) {}
}

interface Prepared<Row> {
  compiled: CompiledQuery<Row>;
  /** For each compiled parameter, the argument it takes, or undefined for a constant of the query. */
  slots: (number | undefined)[];
  /** The statement prepared on an in-process database (SynchronousStatements), for runs inside a transaction. */
  runDirectly: ((parameters: readonly unknown[]) => QueryResult<Row>) | undefined;
}

const statementNames = new Map<string, string>();

/**
 * The name under which a database that keeps prepared statements (PostgreSQL) may prepare a
 * precompiled query's SQL once per connection, rather than parse it on every execution;
 * undefined for any other SQL. Precompiled queries are a fixed few, so their prepared
 * statements are too.
 */
export const precompiledStatementName = (sql: string): string | undefined => statementNames.get(sql);

/**
 * A query that is built and compiled once per dialect, then executed with new values: the
 * config poll runs a few fixed queries thousands of times a second, and building them
 * with Kysely each time cost more than running them. `build` receives one placeholder per
 * argument and must use each only as a plain value.
 */
export function precompiledQuery<Row, Args extends readonly unknown[]>(
  arity: Args['length'],
  build: (db: Db, placeholders: readonly unknown[]) => Compilable<Row>,
): (db: Db, ...args: Args) => Promise<QueryResult<Row>> {
  // Keyed by the dialect adapter, which a database handle shares with its transactions.
  const byAdapter = new WeakMap<object, Prepared<Row>>();
  return (db, ...args) => {
    const adapter = db.getExecutor().adapter;
    let prepared = byAdapter.get(adapter);
    if (!prepared) {
      const compiled = build(db, Array.from({ length: arity }, (_, index) => new Placeholder(index))).compile();
      const slots = compiled.parameters.map((parameter) => (parameter instanceof Placeholder ? parameter.index : undefined));
      if (new Set(slots.filter((slot) => slot !== undefined)).size !== arity) throw new Error('every placeholder must be used');
      prepared = { compiled, slots, runDirectly: runsSynchronously(adapter) ? adapter.prepareCompiled<Row>(compiled.sql) : undefined };
      if (!statementNames.has(compiled.sql)) statementNames.set(compiled.sql, `keyfleet_${statementNames.size + 1}`);
      byAdapter.set(adapter, prepared);
    }
    const { compiled, slots, runDirectly } = prepared;
    const parameters = compiled.parameters.map((constant, position) => {
      const slot = slots[position];
      return slot === undefined ? constant : args[slot];
    });
    // A transaction holds the in-process database's one connection until it ends, so its
    // statements may run on it directly: Kysely's executor chain (connection provider, queue,
    // result transformation by plugins, of which there are none) cost more than a poll's
    // SELECT itself (docs/adr/0103).
    if (runDirectly !== undefined && db.isTransaction && db.getExecutor().plugins.length === 0) {
      try {
        return Promise.resolve(runDirectly(parameters));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return db.executeQuery<Row>({ ...compiled, parameters });
  };
}
