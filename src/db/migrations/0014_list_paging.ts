import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { nullsFirstIndexColumn, rowTrigger } from './frozen/dialect.ts';
import { pageBucketTriggers, recountPageBuckets } from './frozen/page-buckets.ts';
import { ACL_LIST, DLOCK_LIST, OKM_LIST, PENDING_OKM_LIST } from './frozen/paged-lists.ts';

/**
 * Pages of long lists without walking the entries before them (src/db/page-buckets.ts):
 * `page_buckets` and the triggers that keep its counts for every list of paged-lists.ts, each
 * scope starting as one bucket of all its entries (the first page read cuts it up). An OKM
 * created by any path takes its serial number off the pending OKMs, so that the pending list
 * holds only unknown serial numbers and its counts are exact.
 *
 * The OKMs pinned to a firmware version, counted when a release is deleted, from an index of
 * the few that pin one. And the OKM list sorted by last sync time (never polled first, oldest first, or the
 * reverse), one customer's or the whole fleet's, read in index order: one index each, so that
 * a page is a walk of an index, not a sort of the fleet.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('page_buckets')
    .addColumn('list', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('lower_key', 'text', (c) => c.notNull())
    .addColumn('entries', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('page_buckets_pk', ['list', 'scope', 'lower_key'])
    .execute();
  // The lists paged when this migration was written; 0018 added the audit records.
  for (const list of [OKM_LIST, DLOCK_LIST, ACL_LIST, PENDING_OKM_LIST]) {
    await recountPageBuckets(db, list);
    for (const statement of pageBucketTriggers(context, list)) await sql.raw(statement).execute(db);
  }
  // page_buckets counts each customer's ACLs now.
  await db.schema.dropTable('acl_counts').execute();
  await sql`DELETE FROM pending_okms WHERE serial_number IN (SELECT serial_number FROM okms)`.execute(db);
  for (const statement of rowTrigger(context, {
    name: 'okms_not_pending',
    table: 'okms',
    event: 'INSERT',
    statements: ['DELETE FROM pending_okms WHERE serial_number = NEW.serial_number'],
  })) {
    await sql.raw(statement).execute(db);
  }

  // Deleting a firmware release counts the OKMs pinned to it; few OKMs pin a version.
  for (const column of ['kas_firmware', 'batch_key_firmware', 'wireless_key_firmware']) {
    await db.schema.createIndex(`okms_${column}_pin_idx`).on('okms').column(column).where(sql.ref(column), 'is not', null).execute();
  }

  const lastSync = nullsFirstIndexColumn(context, 'last_sync_time');
  await sql`CREATE INDEX okms_customer_last_sync_idx ON okms (customer_id, ${lastSync}, serial_number)`.execute(db);
  await sql`CREATE INDEX okms_last_sync_idx ON okms (${lastSync}, serial_number)`.execute(db);
}
