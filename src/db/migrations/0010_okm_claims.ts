import type { AnyDb } from './migration-context.ts';

/**
 * Failed claims of an OKM (contract §10), one row per serial number, shared by every
 * server process on the database; a row whose window and block are over is pruned.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('okm_claim_failures')
    .addColumn('serial_number', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .addColumn('blocked_until', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('okm_claim_failures_expires_at').on('okm_claim_failures').column('expires_at').execute();
}
