import { sql } from 'kysely';
import type { AnyDb } from './migration-context.ts';

/**
 * Status events are queued by the poll as a mark on the OKM's own row (a page the poll writes
 * anyway), and fanned out into one queue row per subscriber URL by the dispatcher. The partial
 * index holds only the marked OKMs, in the order they were marked.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('okms').addColumn('status_queued_at', 'bigint').execute();
  await db.schema
    .createIndex('okms_status_queued_idx')
    .on('okms')
    .column('status_queued_at')
    .where(sql.ref('status_queued_at'), 'is not', null)
    .execute();
}
