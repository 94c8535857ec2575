import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * What a poll writes moves to a narrow table of its own, and the machinery that kept derived
 * figures up to date on every write goes:
 *
 * - `okm_polls`, one row per OKM that has polled, keyed by serial number: the last sync time,
 *   IP, reported values, installer code and the status mark. A steady poll writes this one row
 *   and no secondary index entry (the status index holds only OKMs with subscribers, while
 *   their status waits for its fan-out). The wide `okms` row, with its lists, is only read.
 * - Every trigger and PL/pgSQL function goes, with the page buckets, their deltas and folder,
 *   and the fleet summary's kept counts: lists page by cursor over ordinary indexes, and the
 *   fleet summary and overdue marks come from a background pass over the fleet.
 * - The indexes on the last sync time and the due time go (a poll moved their entries); an OKM
 *   that never polled is marked by `overdue_at = 0`, as those created without a poll already
 *   were, and the OKMs never polled or overdue have partial indexes, per customer too.
 *
 * Self-contained: it names every table, index and column itself, and reads the catalog for
 * the triggers and functions earlier migrations generated.
 */
export async function up(db: AnyDb, { kind }: MigrationContext): Promise<void> {
  await dropEveryTrigger(db, kind);
  for (const table of ['page_bucket_deltas', 'page_bucket_folder', 'page_buckets', 'fleet_summary_deltas', 'fleet_summary_folder', 'fleet_summary_counts']) {
    await db.schema.dropTable(table).ifExists().execute();
  }

  await db.schema
    .createTable('okm_polls')
    .addColumn('serial_number', 'text', (c) => c.primaryKey().references('okms.serial_number').onDelete('cascade'))
    .addColumn('last_sync_time', 'bigint', (c) => c.notNull())
    .addColumn('last_ip', 'text', (c) => c.notNull())
    .addColumn('reported', 'text', (c) => c.notNull())
    .addColumn('install_code', 'text')
    .addColumn('status_queued_at', 'bigint')
    .execute();
  // PostgreSQL: room on each page for the next version of its rows, so that a poll's update
  // stays on the page (a HOT update, which writes no index entry) rather than moving the row.
  if (kind === 'postgres') await sql`ALTER TABLE okm_polls SET (fillfactor = 60)`.execute(db);
  await sql`INSERT INTO okm_polls (serial_number, last_sync_time, last_ip, reported, install_code, status_queued_at)
    SELECT serial_number, last_sync_time, coalesce(last_ip, ''), coalesce(reported, '{}'), install_code, status_queued_at
    FROM okms WHERE last_sync_time IS NOT NULL`.execute(db);
  await db.schema.createIndex('okm_polls_status_queued_idx').on('okm_polls').column('status_queued_at').where(sql.ref('status_queued_at'), 'is not', null).execute();
  await sql`UPDATE okms SET overdue_at = 0 WHERE last_sync_time IS NULL`.execute(db);

  for (const index of ['okms_last_sync_idx', 'okms_customer_last_sync_idx', 'okms_due_by_idx', 'okms_status_queued_idx']) {
    await db.schema.dropIndex(index).ifExists().execute();
  }
  for (const column of ['last_sync_time', 'last_ip', 'reported', 'install_code', 'due_by', 'status_queued_at']) {
    await db.schema.alterTable('okms').dropColumn(column).execute();
  }

  await db.schema.createIndex('okms_never_polled_idx').on('okms').column('serial_number').where(sql.ref('overdue_at'), '=', sql.lit(0)).execute();
  await db.schema
    .createIndex('okms_customer_never_polled_idx')
    .on('okms')
    .columns(['customer_id', 'serial_number'])
    .where(sql.ref('overdue_at'), '=', sql.lit(0))
    .execute();
  await db.schema
    .createIndex('okms_customer_marked_overdue_idx')
    .on('okms')
    .columns(['customer_id', 'serial_number'])
    .where(sql.ref('overdue_at'), '>', sql.lit(0))
    .execute();

  // The fleet summary as the last complete pass counted it: one row per group of OKMs alike.
  await db.schema
    .createTable('fleet_summary_snapshot')
    .addColumn('customer_id', 'bigint')
    .addColumn('last_correction', 'text')
    .addColumn('firmware_version', 'text')
    .addColumn('batch_key_firmware_version', 'text')
    .addColumn('wireless_key_firmware_version', 'text')
    .addColumn('never_polled', 'integer', (c) => c.notNull())
    .addColumn('overdue', 'integer', (c) => c.notNull())
    .addColumn('okms', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('fleet_summary_snapshot_customer_idx').on('fleet_summary_snapshot').column('customer_id').execute();

  // Background passes that one process at a time runs: who holds each, until when, and when it last completed.
  await db.schema
    .createTable('background_passes')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text')
    .addColumn('lease_expires_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
}

/** Every trigger of the database (page buckets, fleet summary counts, pending OKMs), and on PostgreSQL their PL/pgSQL functions. */
async function dropEveryTrigger(db: AnyDb, kind: MigrationContext['kind']): Promise<void> {
  if (kind === 'sqlite') {
    const { rows } = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'trigger'`.execute(db);
    for (const { name } of rows) await sql`DROP TRIGGER IF EXISTS ${sql.id(name)}`.execute(db);
    return;
  }
  const triggers = await sql<{ trigger: string; table: string }>`
    SELECT t.tgname AS trigger, c.relname AS table
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal AND n.nspname = current_schema()`.execute(db);
  for (const { trigger, table } of triggers.rows) await sql`DROP TRIGGER IF EXISTS ${sql.id(trigger)} ON ${sql.id(table)}`.execute(db);
  const functions = await sql<{ signature: string }>`
    SELECT p.oid::regprocedure::text AS signature
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
    WHERE n.nspname = current_schema() AND l.lanname = 'plpgsql'`.execute(db);
  for (const { signature } of functions.rows) await sql.raw(`DROP FUNCTION IF EXISTS ${signature}`).execute(db);
}
