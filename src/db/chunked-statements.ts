import type { Compilable, QueryResult } from 'kysely';
import type { Db } from './database.ts';
import { precompiledQuery } from './precompiled-query.ts';

/** Rows per statement, so that the statements built for each row count stay few. */
const MAX_ROWS_PER_STATEMENT = 128;

/**
 * A statement over many rows, built and compiled once per row count (`build` gets one list of
 * `argsPerRow` placeholders per row), run over any number of rows in chunks of at most
 * MAX_ROWS_PER_STATEMENT; the rows it returns, if any, of all chunks.
 */
export function multiRowStatement<Row, Result = never>(argsPerRow: number, build: (db: Db, rows: (readonly unknown[])[]) => Compilable<Result>) {
  const byRowCount = new Map<number, (db: Db, ...args: unknown[]) => Promise<QueryResult<Result>>>();
  return async (db: Db, rows: readonly Row[], argsOf: (row: Row) => readonly unknown[]): Promise<Result[]> => {
    const results: Result[] = [];
    for (let start = 0; start < rows.length; start += MAX_ROWS_PER_STATEMENT) {
      const chunk = rows.slice(start, start + MAX_ROWS_PER_STATEMENT);
      let query = byRowCount.get(chunk.length);
      if (!query) {
        query = precompiledQuery<Result, unknown[]>(argsPerRow * chunk.length, (db, args) =>
          build(db, Array.from({ length: chunk.length }, (_, index) => args.slice(argsPerRow * index, argsPerRow * (index + 1)))),
        );
        byRowCount.set(chunk.length, query);
      }
      results.push(...(await query(db, ...chunk.flatMap(argsOf))).rows);
    }
    return results;
  };
}
