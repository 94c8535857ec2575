import { sql, type CreateTableBuilder } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';
import { fleetSummaryTriggers, GROUP_COLUMNS, recountFleetSummary } from './frozen/fleet-summary.ts';

const withGroupColumns = (table: CreateTableBuilder<string, string>) =>
  table
    .addColumn('customer_id', 'integer')
    .addColumn('last_correction', 'text')
    .addColumn('firmware_version', 'text')
    .addColumn('batch_key_firmware_version', 'text')
    .addColumn('wireless_key_firmware_version', 'text')
    .addColumn('never_polled', 'integer', (c) => c.notNull())
    .addColumn('marked_overdue', 'integer', (c) => c.notNull());

/**
 * The fleet summary's counts kept on write (src/okm/fleet-summary-counts.ts): the counts per
 * group, counted afresh from the OKMs there are; the deltas the triggers on okms append; and
 * the one row a fold locks. And the OKMs the overdue sweep has marked, for the list's
 * overdue filters (src/okm/fleet-states.ts): few, and a poll touches the index only when it
 * ends a silence.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema.createTable('fleet_summary_counts').$call(withGroupColumns).addColumn('okms', 'bigint', (c) => c.notNull()).execute();
  // The fold finds a group's row by all its columns; a customer's summary reads its rows.
  await db.schema.createIndex('fleet_summary_counts_group_idx').on('fleet_summary_counts').columns([...GROUP_COLUMNS]).execute();
  await db.schema
    .createTable('fleet_summary_deltas')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .$call(withGroupColumns)
    .addColumn('okms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createTable('fleet_summary_folder').addColumn('id', 'integer', (c) => c.primaryKey()).execute();
  await sql`INSERT INTO fleet_summary_folder (id) VALUES (1)`.execute(db);

  await db.schema.createIndex('okms_marked_overdue_idx').on('okms').column('serial_number').where(sql.ref('overdue_at'), '>', sql.lit(0)).execute();

  await recountFleetSummary(db);
  for (const statement of fleetSummaryTriggers(context)) await sql.raw(statement).execute(db);
}
