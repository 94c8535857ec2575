import { sql } from 'kysely';
import type { DialectStrategy } from '../dialects/strategy.ts';
import type { AnyDb } from '../migrate.ts';

/**
 * The OKM list sorted by last sync time (never polled first, oldest first, or the reverse),
 * one customer's or the whole fleet's, read in index order: one index each, so that a page
 * is a walk of an index rather than a sort of the fleet. Each index is a key and a serial
 * number, so that a deep page walks only narrow entries before the page's rows are read.
 */
export async function up(db: AnyDb, dialect: DialectStrategy): Promise<void> {
  const lastSync = dialect.nullsFirstIndexColumn('last_sync_time');
  await sql`CREATE INDEX okms_customer_last_sync_idx ON okms (customer_id, ${lastSync}, serial_number)`.execute(db);
  await sql`CREATE INDEX okms_last_sync_idx ON okms (${lastSync}, serial_number)`.execute(db);
}
