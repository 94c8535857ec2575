import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * Stuck OKMs and the firmware retry policy (contract §15).
 *
 * - `okm_polls.polls` numbers an OKM's polls: the poll's one upsert adds 1 to the row it
 *   writes anyway, so a steady poll writes no more rows and no index entry. The table is
 *   rebuilt to hold it beside last_sync_time, before the reported values: PostgreSQL logs a
 *   HOT update's new row less the prefix and suffix it shares with the old one, and a column
 *   that changes on every poll at the row's end (where ADD COLUMN puts it) would log the whole
 *   reported text, about 400 bytes more WAL a poll (measured). How many polls in
 *   a row were sent the same correction is that number less the one at which the correction
 *   began, `okms.correction_since_poll`, written with `last_correction` when the answer
 *   changes, as is `correction_digest` (the correction's identity: a changed desired value is
 *   a new correction).
 * - `okms.offer_hold` (JSON) is the retry policy's state for a firmware offer the OKM did not
 *   take: rounds made, offers made, and the poll number from which it is offered again.
 *   Written when a round of offers ends or the offer is taken, never on a steady poll.
 * - `okms.stuck_resolver` / `stuck_since`: written when the OKM becomes stuck or stops being
 *   so. A partial index per list order keeps `state=stuck` a short range.
 * - The retry policy of a customer and of a rollout (JSON; null: the next one up applies).
 * - The fleet summary's snapshot counts stuck OKMs.
 */
export async function up(db: AnyDb, { kind }: MigrationContext): Promise<void> {
  await db.schema
    .createTable('okm_polls_next')
    .addColumn('serial_number', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('last_sync_time', 'bigint', (c) => c.notNull())
    .addColumn('polls', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_ip', 'text', (c) => c.notNull())
    .addColumn('reported', 'text', (c) => c.notNull())
    .addColumn('install_code', 'text')
    .addColumn('status_queued_at', 'bigint')
    .addPrimaryKeyConstraint('okm_polls_next_pkey', ['serial_number'])
    .execute();
  // As okm_polls was: room on each PostgreSQL page for the next version of its rows (HOT updates).
  if (kind === 'postgres') await sql`ALTER TABLE okm_polls_next SET (fillfactor = 60)`.execute(db);
  await sql`INSERT INTO okm_polls_next (serial_number, last_sync_time, polls, last_ip, reported, install_code, status_queued_at)
    SELECT serial_number, last_sync_time, 0, last_ip, reported, install_code, status_queued_at FROM okm_polls`.execute(db);
  await db.schema.dropTable('okm_polls').execute();
  await db.schema.alterTable('okm_polls_next').renameTo('okm_polls').execute();
  if (kind === 'postgres') await sql`ALTER TABLE okm_polls RENAME CONSTRAINT okm_polls_next_pkey TO okm_polls_pkey`.execute(db);
  await db.schema.createIndex('okm_polls_status_queued_idx').on('okm_polls').column('status_queued_at').where(sql.ref('status_queued_at'), 'is not', null).execute();

  for (const [column, type] of [
    ['correction_digest', 'text'],
    ['correction_since_poll', 'bigint'],
    ['offer_hold', 'text'],
    ['stuck_resolver', 'text'],
    ['stuck_since', 'bigint'],
  ] as const) {
    await db.schema.alterTable('okms').addColumn(column, type).execute();
  }
  await db.schema.createIndex('okms_stuck_idx').on('okms').column('serial_number').where(sql.ref('stuck_resolver'), 'is not', null).execute();
  await db.schema
    .createIndex('okms_customer_stuck_idx')
    .on('okms')
    .columns(['customer_id', 'serial_number'])
    .where(sql.ref('stuck_resolver'), 'is not', null)
    .execute();
  await db.schema.alterTable('customers').addColumn('firmware_retry_policy', 'text').execute();
  await db.schema.alterTable('rollouts').addColumn('retry_policy', 'text').execute();
  await db.schema.alterTable('fleet_summary_snapshot').addColumn('stuck', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
