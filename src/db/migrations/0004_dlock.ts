import type { AnyDb, MigrationContext } from './migration-context.ts';
import { idType } from './frozen/dialect.ts';

/**
 * DLock: the deployment secret that salts lock keys (one row, sealed) and the registered
 * locks, one per serial number, each with its key certificate and its sealed lock key.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('dlock_secret')
    .addColumn('slot', 'text', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('dlocks')
    .addColumn('serial_no', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', idType(context), (c) => c.notNull().references('customers.id'))
    .addColumn('certificate_name', 'text', (c) => c.notNull())
    .addColumn('certificate_json', 'text', (c) => c.notNull())
    .addColumn('key_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dlocks_customer_idx').on('dlocks').columns(['customer_id', 'serial_no']).execute();
}
