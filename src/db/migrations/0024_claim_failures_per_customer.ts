import type { AnyDb, MigrationContext } from './migration-context.ts';
import { idType } from './frozen/dialect.ts';

/**
 * Failed claims are counted per customer and serial number (contract §10), so that one
 * customer's failures block only that customer: `okm_claim_customer_failures`, one row per
 * customer and serial number, pruned like `okm_claim_failures` once its window and block are
 * over. `okm_claim_failures` keeps the count of every customer, which now only slows claims,
 * for a short time it keeps in `slowed_until`. Its `blocked_until`, a block of every customer
 * that earlier versions set, stays for processes of those versions during a rolling restart,
 * and is no longer read.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema.alterTable('okm_claim_failures').addColumn('slowed_until', 'bigint').execute();
  await db.schema
    .createTable('okm_claim_customer_failures')
    .addColumn('serial_number', 'text', (c) => c.notNull())
    .addColumn('customer_id', idType(context), (c) => c.notNull().references('customers.id').onDelete('cascade'))
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .addColumn('blocked_until', 'bigint')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('okm_claim_customer_failures_pkey', ['serial_number', 'customer_id'])
    .execute();
  await db.schema.createIndex('okm_claim_customer_failures_expires_at').on('okm_claim_customer_failures').column('expires_at').execute();
}
