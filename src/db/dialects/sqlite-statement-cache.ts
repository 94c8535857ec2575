import type SQLite from 'better-sqlite3';

const MAX_CACHED_STATEMENTS = 500;

/**
 * Makes `database.prepare` reuse prepared statements by SQL text. Kysely prepares every
 * query it runs, and preparing cost more than running the config poll's statements.
 * Safe because Kysely's SQLite driver runs one statement at a time on its one connection.
 */
export function cacheStatements(database: SQLite.Database): void {
  const prepare = database.prepare.bind(database);
  const statements = new Map<string, SQLite.Statement>();
  database.prepare = ((sql: string) => {
    let statement = statements.get(sql);
    if (statement) {
      // Re-inserted so that the map's order is least recently used first.
      statements.delete(sql);
    } else {
      statement = prepare(sql);
      if (statements.size >= MAX_CACHED_STATEMENTS) statements.delete(statements.keys().next().value!);
    }
    statements.set(sql, statement);
    return statement;
  }) as typeof database.prepare;
}
