import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/** The fleet default polling interval (contract §4) assumed for OKMs that polled before this migration. */
const DEFAULT_POLLING_INTERVAL_S = 150;

/**
 * Fleet events (contract §14): webhook endpoints (per customer, or deployment-wide when
 * customer_id is null) with their event types, one delivery row per event and endpoint, and
 * on each OKM the time it becomes overdue (due_by, set by each poll) and when the overdue sweep
 * marked it (overdue_at; 0: never polled as an OKM, so its next poll is its enrolment).
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('customer_id', 'integer', (c) => c.references('customers.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_customer_idx').on('webhook_endpoints').columns(['customer_id', 'id']).execute();

  await db.schema
    .createTable('fleet_event_deliveries')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('endpoint_id', 'bigint', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('customer_id', 'integer')
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('host', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claim_token', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'bigint')
    .execute();
  // As status_events_pending_idx: the dispatcher seeks hosts and claims due rows through it.
  await db.schema
    .createIndex('fleet_event_deliveries_pending_idx')
    .on('fleet_event_deliveries')
    .columns(['host', 'next_attempt_at'])
    .where(sql.ref('state'), '=', sql.lit('pending'))
    .execute();
  await db.schema.createIndex('fleet_event_deliveries_endpoint_idx').on('fleet_event_deliveries').columns(['endpoint_id', 'id']).execute();
  await db.schema.createIndex('fleet_event_deliveries_age_idx').on('fleet_event_deliveries').column('created_at').execute();

  await db.schema.alterTable('okms').addColumn('due_by', 'bigint').execute();
  await db.schema.alterTable('okms').addColumn('overdue_at', 'bigint', (c) => c.defaultTo(0)).execute();
  await sql`UPDATE okms SET overdue_at = NULL,
    due_by = last_sync_time + 3000 * coalesce(polling_interval, ${sql.lit(DEFAULT_POLLING_INTERVAL_S)})
    WHERE last_sync_time IS NOT NULL`.execute(db);
  // The overdue sweep reads only the entries past due; OKMs already marked leave the index.
  await db.schema
    .createIndex('okms_due_by_idx')
    .on('okms')
    .column('due_by')
    .where(sql.ref('overdue_at'), 'is', null)
    .execute();
}
