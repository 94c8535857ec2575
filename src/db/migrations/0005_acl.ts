import type { AnyDb, MigrationContext } from './migration-context.ts';
import { idType } from './frozen/dialect.ts';

/**
 * Access control lists. `acls` is small (owner, link, times) so that locking it is cheap;
 * the lists, which reach megabytes, are in `acl_contents`. An OKM linked to an ACL reads its
 * asset lists from there (its own row keeps only their digests), so polls never rewrite them.
 * `acl_counts` keeps each customer's number of ACLs, so that a list page need not count them.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('acls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', idType(context), (c) => c.notNull().references('customers.id'))
    .addColumn('okm_serial', 'text', (c) => c.references('okms.serial_number').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('acls_customer_idx').on('acls').columns(['customer_id', 'id']).execute();
  // NULLs are distinct on both databases: any number of unlinked ACLs, one per OKM otherwise.
  await db.schema.createIndex('acls_okm_idx').on('acls').column('okm_serial').unique().execute();

  await db.schema
    .createTable('acl_contents')
    .addColumn('acl_id', 'text', (c) => c.primaryKey().references('acls.id').onDelete('cascade'))
    .addColumn('users', 'text', (c) => c.notNull())
    .addColumn('locks', 'text', (c) => c.notNull())
    .addColumn('user_data', 'text')
    .execute();

  await db.schema
    .createTable('acl_counts')
    .addColumn('customer_id', idType(context), (c) => c.primaryKey().references('customers.id'))
    .addColumn('total', 'bigint', (c) => c.notNull())
    .execute();
}
