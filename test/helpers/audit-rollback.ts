import { createHash } from 'node:crypto';
import type { Db } from '../../src/db/database.ts';

/** A table, or some of its columns, that a digest leaves out, and why a change's rollback cannot be seen there. */
export interface DigestExclusion {
  table: string;
  /** The columns left out; the whole table when absent. */
  columns?: readonly string[];
  why: string;
}

/** A value as the digest reads it: the same whatever the driver returns for it (bytes, 64-bit integers, dates). */
function comparable(value: unknown): unknown {
  if (value instanceof Uint8Array) return `bytes:${createHash('sha256').update(value).digest('hex')}`;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  return value;
}

/** Every table's rows, as the digest compares them: per table, each row as JSON with its columns sorted, the rows sorted. */
export type DatabaseDigest = Record<string, string[]>;

/**
 * A digest of every table of the database (also Kysely's own), read through Kysely. Two
 * digests are equal when no row was inserted, deleted or changed, but for the exclusions.
 */
export async function databaseDigest(db: Db, exclusions: readonly DigestExclusion[] = []): Promise<DatabaseDigest> {
  const tables = (await db.introspection.getTables({ withInternalKyselyTables: true })).filter((table) => !table.isView);
  const digest: DatabaseDigest = {};
  for (const table of tables) {
    const excluded = exclusions.filter((exclusion) => exclusion.table === table.name);
    if (excluded.some((exclusion) => exclusion.columns === undefined)) continue;
    const leftOut = new Set(excluded.flatMap((exclusion) => exclusion.columns ?? []));
    const inDefaultSchema = table.schema === undefined || table.schema === 'public';
    const from = inDefaultSchema ? db : db.withSchema(table.schema!);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- every table, by the name the database gives it
    const rows = (await from.selectFrom(table.name as any).selectAll().execute()) as Record<string, unknown>[];
    digest[inDefaultSchema ? table.name : `${table.schema}.${table.name}`] = rows
      .map((row) =>
        JSON.stringify(
          Object.keys(row)
            .filter((column) => !leftOut.has(column))
            .sort()
            .map((column) => [column, comparable(row[column])]),
        ),
      )
      .sort();
  }
  return digest;
}

/** What differs between two digests, table by table: the rows only one of them has (none: the same database). */
export function digestDifferences(before: DatabaseDigest, after: DatabaseDigest): string[] {
  const differences: string[] = [];
  for (const table of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const [was, is] = [before[table] ?? [], after[table] ?? []];
    const gone = was.filter((row) => !is.includes(row));
    const added = is.filter((row) => !was.includes(row));
    for (const row of gone) differences.push(`${table} - ${row}`);
    for (const row of added) differences.push(`${table} + ${row}`);
    if (!(table in before) || !(table in after)) differences.push(`${table}: ${table in before ? 'dropped' : 'created'}`);
  }
  return differences;
}
