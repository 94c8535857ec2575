import type { DialectStrategy } from '../dialects/strategy.ts';
import type { AnyDb } from '../migrate.ts';

/** DLock API keys: only a SHA-256 of each key is stored, found by the key's public id. */
export async function up(db: AnyDb, dialect: DialectStrategy): Promise<void> {
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', dialect.idType, (c) => c.notNull().references('customers.id'))
    .addColumn('label', 'text')
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('api_keys_customer_idx').on('api_keys').columns(['customer_id', 'id']).execute();
}
