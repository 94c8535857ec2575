import type { Kysely } from 'kysely';
import type { Db } from '../db/database.ts';
import type { KeyRing } from './key-ring.ts';
import { decrypt } from './sealed-box.ts';
import type { SealedColumn } from './sealed-columns.ts';

const PAGE_SIZE = 500;

type Row = Record<string, string | number | null>;
// Table and column names come from the capabilities' sealed columns, not from input: the one place typed loosely.
const untyped = (db: Db) => db as unknown as Kysely<Record<string, Row>>;

/** Whether one value of each column sealed before key ids ("v1.…", directly under the master key) opens with `masterKey`. */
export async function legacyValuesOpen(db: Db, columns: readonly SealedColumn[], masterKey: Buffer): Promise<boolean> {
  for (const sealed of columns) {
    const { table, column }: { table: string; column: string } = sealed;
    const row = await untyped(db).selectFrom(table).select([column, ...sealed.reads]).where(column, 'like', 'v1.%').limit(1).executeTakeFirst();
    if (!row) continue;
    try {
      decrypt(masterKey, (row[column] as string).slice('v1.'.length), sealed.associatedData(row));
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Reseals, page by page, every value of the ring's sealed columns not yet under its current data key (under the
 * previous one, or "v1" from before key ids). Safe while servers run: a row is rewritten only
 * if it still holds the value read, so a value a server changed meanwhile is left as it wrote
 * it. Returns the number of values resealed per "table.column".
 */
export async function resealValues(db: Db, ring: KeyRing, signal?: AbortSignal): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const sealed of ring.sealedColumns) {
    const { table, key, column }: { table: string; key: string; column: string } = sealed;
    const name = `${table}.${column}`;
    counts[name] = 0;
    for (let after: string | number | undefined; ; ) {
      signal?.throwIfAborted();
      const currentPrefix = `v2.${await ring.currentKid()}.%`;
      let query = untyped(db)
        .selectFrom(table)
        .select([key, column, ...sealed.reads])
        .where(column, 'is not', null)
        .where(column, 'not like', currentPrefix)
        .orderBy(key)
        .limit(PAGE_SIZE);
      if (after !== undefined) query = query.where(key, '>', after);
      const rows = await query.execute();
      for (const row of rows) {
        const associatedData = sealed.associatedData(row);
        const old = row[column] as string;
        const resealed = await ring.seal(await ring.open(old, associatedData), associatedData);
        const result = await untyped(db).updateTable(table).set({ [column]: resealed }).where(key, '=', row[key]!).where(column, '=', old).executeTakeFirst();
        counts[name] += Number(result.numUpdatedRows);
      }
      if (rows.length < PAGE_SIZE) break;
      after = rows.at(-1)![key]!;
    }
  }
  return counts;
}

/** How many values of the columns are sealed under anything but data key `kid`. */
export async function countSealedNotUnder(db: Db, columns: readonly SealedColumn[], kid: string): Promise<number> {
  let count = 0;
  for (const sealed of columns) {
    const { table, column }: { table: string; column: string } = sealed;
    const row = await untyped(db)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where(column, 'is not', null)
      .where(column, 'not like', `v2.${kid}.%`)
      .executeTakeFirstOrThrow();
    count += Number(row.count);
  }
  return count;
}

/**
 * A server's start: reseals in the background what is not under the current data key (values
 * from before key ids, or left under the previous key), logging what it did. stop() waits for it.
 */
export function startBackgroundReseal(db: Db, ring: KeyRing, log: { info(o: object, m: string): void; error(o: object, m: string): void }): { stop(): Promise<void> } {
  const abort = new AbortController();
  const done = resealValues(db, ring, abort.signal).then(
    (resealed) => {
      const total = Object.values(resealed).reduce((sum, count) => sum + count, 0);
      if (total > 0) log.info({ resealed }, 'resealed values under the current data key');
    },
    (error: unknown) => {
      if (!abort.signal.aborted) log.error({ err: error }, 'resealing under the current data key failed; keyfleet master-key rotate --yes does it too');
    },
  );
  return {
    async stop() {
      abort.abort();
      await done;
    },
  };
}
