import type { DialectStrategy } from '../dialects/strategy.ts';
import type { AnyDb } from '../migrate.ts';

/**
 * DLock: the deployment secret that salts lock keys (one row, sealed) and the registered
 * locks, one per serial number, each with its key certificate and its sealed lock key.
 */
export async function up(db: AnyDb, dialect: DialectStrategy): Promise<void> {
  await db.schema
    .createTable('dlock_secret')
    .addColumn('slot', 'text', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('dlocks')
    .addColumn('serial_no', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', dialect.idType, (c) => c.notNull().references('customers.id'))
    .addColumn('certificate_name', 'text', (c) => c.notNull())
    .addColumn('certificate_json', 'text', (c) => c.notNull())
    .addColumn('key_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dlocks_customer_idx').on('dlocks').columns(['customer_id', 'serial_no']).execute();
}
