import type { AnyDb, MigrationContext } from './migration-context.ts';
import { idType } from './frozen/dialect.ts';

/** DLock API keys: only a SHA-256 of each key is stored, found by the key's public id. */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', idType(context), (c) => c.notNull().references('customers.id'))
    .addColumn('label', 'text')
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_customer_idx').on('api_keys').columns(['customer_id', 'id']).execute();
}
