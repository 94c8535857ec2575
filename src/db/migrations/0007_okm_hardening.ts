import type { AnyDb } from './migration-context.ts';

/**
 * Device hardening (both off by default): OKMs waiting for an operator to accept them, when
 * auto-enrol is off, and each OKM's device token, stored as a SHA-256 only.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('pending_okms')
    .addColumn('serial_number', 'text', (c) => c.primaryKey())
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('last_ip', 'text', (c) => c.notNull())
    .addColumn('firmware_version', 'text')
    .addColumn('call_count', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('okms').addColumn('device_token_hash', 'text').execute();
  await db.schema.alterTable('okms').addColumn('device_token_issued_at', 'bigint').execute();
}
