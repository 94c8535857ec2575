import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * The ACL search by lock ignores case (`lock=door-1` finds DOOR-1): it compares lower() of the
 * stored serial with the lower-cased text. Serial numbers are ASCII ([A-Za-z0-9._-]), which
 * lower() folds alike on both databases. The index (customer_id, lower(lock_serial), acl_id)
 * replaces (customer_id, lock_serial, acl_id), which only that search read: the search stays
 * a range of one customer's index entries, and an ACL write maintains as many index entries as
 * before. Both databases use an index on an expression when the query names the same expression.
 */
export async function up(db: AnyDb, _context: MigrationContext): Promise<void> {
  await db.schema.dropIndex('acl_locks_customer_lock_idx').execute();
  await sql`CREATE INDEX acl_locks_customer_lock_lower_idx ON acl_locks (customer_id, lower(lock_serial), acl_id)`.execute(db);
}
