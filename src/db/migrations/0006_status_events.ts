import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/**
 * Status events (contract §6): one queue row per OKM and subscriber URL saying whether the OKM's
 * current status (on its own row) still has to be delivered there, and what happened last;
 * the failed attempts log; and the whsec_ signing secrets (per customer, and one for OKMs
 * with no customer).
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('status_events')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('okm_serial', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claim_token', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('last_event_id', 'text')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'bigint')
    .addUniqueConstraint('status_events_okm_url_key', ['okm_serial', 'url'])
    .execute();
  // The dispatcher claims the due pending rows of one host at a time, oldest due first, and
  // finds the hosts by seeking through this index; other states are not indexed.
  await db.schema
    .createIndex('status_events_pending_idx')
    .on('status_events')
    .columns(['host', 'next_attempt_at'])
    .where(sql.ref('state'), '=', sql.lit('pending'))
    .execute();

  await db.schema
    .createTable('status_delivery_failures')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('okm_serial', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint')
    .execute();
  await db.schema.createIndex('status_delivery_failures_okm_idx').on('status_delivery_failures').columns(['okm_serial', 'id']).execute();
  await db.schema.createIndex('status_delivery_failures_age_idx').on('status_delivery_failures').column('attempted_at').execute();

  await db.schema
    .createTable('webhook_secrets')
    .addColumn('owner', 'text', (c) => c.primaryKey())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('previous_secret_sealed', 'text')
    .addColumn('previous_valid_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('rotated_at', 'bigint')
    .execute();
}
