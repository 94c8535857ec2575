import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * Drift and fleet summary (contract §11): the reply key of the resolver that answered each
 * OKM's last poll (null: in step), the batch key and wireless key firmware versions the device
 * last reported (kasFirmware is firmware_version), and the index the fleet summary counts and
 * groups on, so that it reads an index, not the table.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema.alterTable('okms').addColumn('last_correction', 'text').execute();
  await db.schema.alterTable('okms').addColumn('batch_key_firmware_version', 'text').execute();
  await db.schema.alterTable('okms').addColumn('wireless_key_firmware_version', 'text').execute();
  const reportedValue = (name: string) =>
    context.kind === 'postgres' ? sql`(reported::json ->> ${sql.lit(name)})` : sql`json_extract(reported, ${sql.lit(`$.${name}`)})`;
  await sql`UPDATE okms SET batch_key_firmware_version = ${reportedValue('batchKeyFirmware')},
    wireless_key_firmware_version = ${reportedValue('wirelessKeyFirmware')} WHERE reported IS NOT NULL`.execute(db);
  // The fleet summary reads only this index, in one walk: grouped by its leading columns (in
  // its order, so SQLite aggregates as it goes), counting never polled and overdue from the
  // last two. One index rather than one per figure also keeps the poll's UPDATE cheaper.
  await db.schema
    .createIndex('okms_summary_idx')
    .on('okms')
    .columns([
      'customer_id',
      'last_correction',
      'firmware_version',
      'batch_key_firmware_version',
      'wireless_key_firmware_version',
      'last_sync_time',
      'polling_interval',
    ])
    .execute();
}
