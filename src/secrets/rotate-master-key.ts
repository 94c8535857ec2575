import type { Kysely } from 'kysely';
import { SIGNING_PRIVATE_KEYS } from '../auth/signing-keys.ts';
import type { Db } from '../db/database.ts';
import { DEPLOYMENT_SECRET } from '../dlock/key-certificate.ts';
import { LOCK_KEYS } from '../dlock/locks.ts';
import { INTERMEDIATE_PRIVATE_KEYS } from '../pki/intermediates.ts';
import { ROOT_PRIVATE_KEY } from '../pki/root-ca.ts';
import { PREVIOUS_WEBHOOK_SECRETS, WEBHOOK_SECRETS } from '../webhooks/secrets.ts';
import { open, seal } from './sealed-box.ts';
import type { SealedColumn } from './sealed-columns.ts';

/** Every column sealed under the master key. A new one is one line here. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  ROOT_PRIVATE_KEY,
  INTERMEDIATE_PRIVATE_KEYS,
  SIGNING_PRIVATE_KEYS,
  DEPLOYMENT_SECRET,
  LOCK_KEYS,
  WEBHOOK_SECRETS,
  PREVIOUS_WEBHOOK_SECRETS,
];

const PAGE_SIZE = 1000;

/**
 * Reseals every sealed value from `oldKey` to `newKey` in one transaction: either all of them
 * move to the new key or none does. Servers must be stopped meanwhile: they hold the old key.
 * Returns the number of values resealed per table.
 */
export async function rotateMasterKey(db: Db, oldKey: Buffer, newKey: Buffer): Promise<Record<string, number>> {
  if (oldKey.equals(newKey)) throw new Error('the new master key is the current one');
  return db.transaction().execute(async (tx) => {
    // Table and column names come from SEALED_COLUMNS, not from input: the one place typed loosely.
    const untyped = tx as unknown as Kysely<Record<string, Record<string, string | number>>>;
    const counts: Record<string, number> = {};
    for (const sealed of SEALED_COLUMNS) {
      const { table, key, column }: { table: string; key: string; column: string } = sealed;
      counts[`${table}.${column}`] = 0;
      for (let after: string | number | undefined; ; ) {
        let query = untyped
          .selectFrom(table)
          .select([key, column, ...sealed.reads])
          .orderBy(key)
          .limit(PAGE_SIZE);
        if (after !== undefined) query = query.where(key, '>', after);
        const rows = await query.execute();
        for (const row of rows) {
          // A nullable column (the previous webhook secret) may hold nothing to reseal.
          if (row[column] === null) continue;
          const associatedData = sealed.associatedData(row);
          const value = seal(newKey, open(oldKey, row[column] as string, associatedData), associatedData);
          await untyped.updateTable(table).set({ [column]: value }).where(key, '=', row[key]!).execute();
        }
        counts[`${table}.${column}`]! += rows.filter((row) => row[column] !== null).length;
        if (rows.length < PAGE_SIZE) break;
        after = rows.at(-1)![key];
      }
    }
    return counts;
  });
}
