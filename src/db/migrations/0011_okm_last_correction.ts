import { sql } from 'kysely';
import type { DialectStrategy } from '../dialects/strategy.ts';
import type { AnyDb } from '../migrate.ts';

/**
 * Drift and fleet summary (SPEC section 11): the reply key of the resolver that answered each
 * OKM's last poll (null: in step), the batch key and wireless key firmware versions the device
 * last reported (kasFirmware is firmware_version), and the indexes the fleet summary counts
 * and groups on, so that it reads indexes, not the table.
 */
export async function up(db: AnyDb, dialect: DialectStrategy): Promise<void> {
  await db.schema.alterTable('okms').addColumn('last_correction', 'text').execute();
  await db.schema.alterTable('okms').addColumn('batch_key_firmware_version', 'text').execute();
  await db.schema.alterTable('okms').addColumn('wireless_key_firmware_version', 'text').execute();
  const reportedValue = (name: string) =>
    dialect.name === 'postgres' ? sql`(reported::json ->> ${sql.lit(name)})` : sql`json_extract(reported, ${sql.lit(`$.${name}`)})`;
  await sql`UPDATE okms SET batch_key_firmware_version = ${reportedValue('batchKeyFirmware')},
    wireless_key_firmware_version = ${reportedValue('wirelessKeyFirmware')} WHERE reported IS NOT NULL`.execute(db);
  // Covers the summary's counts: by correction, never polled and overdue (which needs the interval).
  await db.schema
    .createIndex('okms_drift_idx')
    .on('okms')
    .columns(['customer_id', 'last_correction', 'last_sync_time', 'polling_interval'])
    .execute();
  await db.schema.createIndex('okms_firmware_version_idx').on('okms').columns(['customer_id', 'firmware_version']).execute();
  await db.schema.createIndex('okms_batch_key_firmware_version_idx').on('okms').columns(['customer_id', 'batch_key_firmware_version']).execute();
  await db.schema
    .createIndex('okms_wireless_key_firmware_version_idx')
    .on('okms')
    .columns(['customer_id', 'wireless_key_firmware_version'])
    .execute();
}
