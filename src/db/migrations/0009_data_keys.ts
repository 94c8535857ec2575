import { sql } from 'kysely';
import type { AnyDb } from './migration-context.ts';

/**
 * Envelope encryption: values are sealed under data keys, each stored here wrapped (encrypted)
 * under the master key. master_key_check is the fingerprint of the master key that wraps the
 * row, so a process with another master key is refused at start. At most one key is current
 * and one previous; a retired key keeps its row (for the record) but loses its material.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('data_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('wrapped_key', 'text')
    .addColumn('master_key_check', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('previous_since', 'bigint')
    .addColumn('retired_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('data_keys_one_per_live_state')
    .on('data_keys')
    .column('state')
    .unique()
    .where(sql.ref('state'), 'in', sql`('current', 'previous')`)
    .execute();
}
