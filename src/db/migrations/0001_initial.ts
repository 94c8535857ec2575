import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, binaryType, idType } from './frozen/dialect.ts';

export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('customers')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('algorithm', 'text', (c) => c.notNull())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_jwk_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('retired_at', 'bigint')
    .execute();
  // At most one active key: processes starting together cannot each create one.
  await db.schema
    .createIndex('signing_keys_one_active')
    .on('signing_keys')
    .unique()
    .expression(sql`(retired_at is null)`)
    .where(sql.ref('retired_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('firmware_releases')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('firmware_releases_pk', ['kind', 'version'])
    .execute();

  await db.schema
    .createTable('firmware_chunks')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('data', binaryType(context), (c) => c.notNull())
    .addPrimaryKeyConstraint('firmware_chunks_pk', ['kind', 'version', 'seq'])
    .addForeignKeyConstraint('firmware_chunks_release_fk', ['kind', 'version'], 'firmware_releases', ['kind', 'version'], (fk) =>
      fk.onDelete('cascade'),
    )
    .execute();

  await db.schema
    .createTable('fleet_firmware')
    .addColumn('kind', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .addForeignKeyConstraint('fleet_firmware_release_fk', ['kind', 'version'], 'firmware_releases', ['kind', 'version'])
    .execute();

  await db.schema
    .createTable('okms')
    .addColumn('serial_number', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', idType(context), (c) => c.references('customers.id'))
    .addColumn('cache_mode', 'integer')
    .addColumn('key_checkout_window_time', 'integer')
    .addColumn('key_checkout_window_contact', 'text')
    .addColumn('auditing_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('asset_list', 'text')
    .addColumn('asset_list_digest', 'text')
    .addColumn('users_assets', 'text')
    .addColumn('users_assets_digest', 'text')
    .addColumn('polling_interval', 'integer')
    .addColumn('kas_firmware', 'text')
    .addColumn('batch_key_firmware', 'text')
    .addColumn('wireless_key_firmware', 'text')
    .addColumn('status_urls', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('reported', 'text')
    .addColumn('install_code', 'text')
    .addColumn('last_sync_time', 'bigint')
    .addColumn('last_ip', 'text')
    .addColumn('firmware_version', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('okms_customer_idx').on('okms').columns(['customer_id', 'serial_number']).execute();

  await db.schema
    .createTable('okm_messages')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('okm_serial', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  await db.schema.createIndex('okm_messages_okm_idx').on('okm_messages').columns(['okm_serial', 'id']).execute();
  // Polls look for the oldest undelivered message; delivered ones stay as history.
  await db.schema.createIndex('okm_messages_pending_idx').on('okm_messages').columns(['okm_serial', 'delivered_at', 'id']).execute();

  await db.schema
    .createTable('okm_audit_records')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('okm_serial', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addColumn('record', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('okm_audit_records_okm_idx').on('okm_audit_records').columns(['okm_serial', 'id']).execute();
}
