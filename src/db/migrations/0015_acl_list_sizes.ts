import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * The sizes of each ACL's lists, stored with them on every write, so that the summary list
 * (GET /api/v1/acl-summaries) reads two integers instead of counting lists of up to megabytes.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema.alterTable('acl_contents').addColumn('user_count', 'integer', (column) => column.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('acl_contents').addColumn('lock_count', 'integer', (column) => column.notNull().defaultTo(0)).execute();
  // PostgreSQL's json_array_length needs a cast that parses the text, several times slower on
  // users lists of megabytes than counting their "user_id" members, which is exact: the text is
  // canonical JSON (canonicalUsersJson), one user_id member per user, no other strings but
  // alphanumeric PIN hashes.
  const counts =
    context.kind === 'postgres'
      ? sql`user_count = (octet_length(users) - octet_length(replace(users, '"user_id":', ''))) / 10, lock_count = json_array_length(locks::json)`
      : sql`user_count = json_array_length(users), lock_count = json_array_length(locks)`;
  await sql`UPDATE acl_contents SET ${counts}`.execute(db);
}
