import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';
import { pageBucketTriggers } from './frozen/page-buckets.ts';
import { PAGED_LISTS } from './frozen/paged-lists.ts';

/**
 * Page-bucket counts kept on PostgreSQL by appending deltas rather than updating the buckets in
 * place (src/db/dialects/postgres-page-buckets.ts): every list's triggers anew, which also drop
 * the functions of the in-place ones. The deltas table is created by those statements (IF NOT
 * EXISTS), not here: migrations 0014 and 0018 create these same triggers (frozen/page-buckets.ts),
 * so on a fresh database the triggers that append to it exist from 0014 on, and the table must too
 * (a database migrated part of the way and written to, as a test of 0018 does, needs it).
 * SQLite keeps its in-place triggers and gets an empty deltas table here, so that readers and
 * the keeper are the same on both. And the one row a keeper step locks.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  for (const list of PAGED_LISTS) {
    for (const statement of pageBucketTriggers(context, list)) await sql.raw(statement).execute(db);
  }
  await db.schema
    .createTable('page_bucket_deltas')
    .ifNotExists()
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('list', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('entries', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('page_bucket_deltas_key_idx').ifNotExists().on('page_bucket_deltas').columns(['list', 'scope', 'key']).execute();
  await db.schema.createTable('page_bucket_folder').addColumn('id', 'integer', (c) => c.primaryKey()).execute();
  await sql`INSERT INTO page_bucket_folder (id) VALUES (1)`.execute(db);
}
