import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/** The deployment root CA and the customers' intermediate certificates. */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  // One row per deployment: the primary key on a constant slot admits a single root, so
  // processes starting together insert-if-absent and all read back the winner.
  await db.schema
    .createTable('pki_root')
    .addColumn('slot', 'text', (c) => c.primaryKey())
    .addColumn('serial', 'text', (c) => c.notNull())
    .addColumn('certificate_pem', 'text', (c) => c.notNull())
    .addColumn('private_key_sealed', 'text', (c) => c.notNull())
    .addColumn('imported', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  // Certificate names are unique across the deployment (POST /v1/dlock names one).
  await db.schema
    .createTable('intermediate_certificates')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('customer_id', idType(context), (c) => c.notNull().references('customers.id'))
    .addColumn('serial', 'text', (c) => c.notNull())
    .addColumn('certificate_pem', 'text', (c) => c.notNull())
    .addColumn('private_key_sealed', 'text', (c) => c.notNull())
    .addColumn('not_after', 'bigint', (c) => c.notNull())
    .addColumn('imported', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('intermediate_certificates_customer_idx').on('intermediate_certificates').columns(['customer_id', 'name']).execute();
}
