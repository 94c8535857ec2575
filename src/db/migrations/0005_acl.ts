import type { DialectStrategy } from '../dialects/strategy.ts';
import type { AnyDb } from '../migrate.ts';

/**
 * Access control lists: one row per ACL, its users and locks as JSON text, `user_data` as the
 * caller's own JSON text, and the OKM it is linked to (at most one ACL per OKM).
 */
export async function up(db: AnyDb, dialect: DialectStrategy): Promise<void> {
  await db.schema
    .createTable('acls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', dialect.idType, (c) => c.notNull().references('customers.id'))
    .addColumn('okm_serial', 'text', (c) => c.references('okms.serial_number').onDelete('set null'))
    .addColumn('users', 'text', (c) => c.notNull())
    .addColumn('locks', 'text', (c) => c.notNull())
    .addColumn('user_data', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('acls_customer_idx').on('acls').columns(['customer_id', 'id']).execute();
  // NULLs are distinct on both databases: any number of unlinked ACLs, one per OKM otherwise.
  await db.schema.createIndex('acls_okm_idx').on('acls').column('okm_serial').unique().execute();
}
