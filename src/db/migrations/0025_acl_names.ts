import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { idType } from './frozen/dialect.ts';

/**
 * ACLs that can be found (issue 26): an optional `name` with the key it is searched by, and two
 * side tables that say which ACLs hold a user id and a lock serial. Searching those inside the
 * stored lists would read every list of the customer (megabytes each); the side tables are
 * written by the ACL write path only, in the write's transaction, and their indexes start with
 * the customer, as every search is a customer's. No trigger: the write path is the one writer.
 *
 * `name_key` is the name as the search compares it (case-folded by the application, the same
 * way on both databases); the index (customer_id, name_key, id) lets a name search read one
 * customer's index entries, never the rows.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema.alterTable('acls').addColumn('name', 'text').execute();
  await db.schema.alterTable('acls').addColumn('name_key', 'text').execute();
  await db.schema.createIndex('acls_customer_name_idx').on('acls').columns(['customer_id', 'name_key', 'id']).execute();

  await db.schema
    .createTable('acl_users')
    .addColumn('acl_id', 'text', (c) => c.notNull().references('acls.id').onDelete('cascade'))
    .addColumn('customer_id', idType(context), (c) => c.notNull())
    .addColumn('user_id', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('acl_users_pkey', ['acl_id', 'user_id'])
    .execute();
  await db.schema.createIndex('acl_users_customer_user_idx').on('acl_users').columns(['customer_id', 'user_id', 'acl_id']).execute();

  await db.schema
    .createTable('acl_locks')
    .addColumn('acl_id', 'text', (c) => c.notNull().references('acls.id').onDelete('cascade'))
    .addColumn('customer_id', idType(context), (c) => c.notNull())
    .addColumn('lock_serial', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('acl_locks_pkey', ['acl_id', 'lock_serial'])
    .execute();
  await db.schema.createIndex('acl_locks_customer_lock_idx').on('acl_locks').columns(['customer_id', 'lock_serial', 'acl_id']).execute();

  // The ACLs already stored: their lists are JSON arrays (users of objects with a user_id, locks
  // of serial numbers), read once here with each database's own JSON functions.
  if (context.kind === 'postgres') {
    await sql`INSERT INTO acl_users (acl_id, customer_id, user_id)
      SELECT a.id, a.customer_id, (u.value ->> 'user_id')::integer
      FROM acls a JOIN acl_contents c ON c.acl_id = a.id CROSS JOIN LATERAL json_array_elements(c.users::json) AS u(value)`.execute(db);
    await sql`INSERT INTO acl_locks (acl_id, customer_id, lock_serial)
      SELECT a.id, a.customer_id, l.serial
      FROM acls a JOIN acl_contents c ON c.acl_id = a.id CROSS JOIN LATERAL json_array_elements_text(c.locks::json) AS l(serial)`.execute(db);
  } else {
    await sql`INSERT INTO acl_users (acl_id, customer_id, user_id)
      SELECT a.id, a.customer_id, json_extract(u.value, '$.user_id')
      FROM acls a JOIN acl_contents c ON c.acl_id = a.id, json_each(c.users) AS u`.execute(db);
    await sql`INSERT INTO acl_locks (acl_id, customer_id, lock_serial)
      SELECT a.id, a.customer_id, l.value
      FROM acls a JOIN acl_contents c ON c.acl_id = a.id, json_each(c.locks) AS l`.execute(db);
  }
}
