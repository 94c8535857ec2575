import { sql } from 'kysely';
import type { AnyDb } from './migration-context.ts';

/**
 * Stuck OKMs and the firmware retry policy (SPEC section 15).
 *
 * - `okm_polls.polls` numbers an OKM's polls: the poll's one upsert adds 1 to the row it
 *   writes anyway, so a steady poll writes no more rows and no index entry. How many polls in
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
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('okm_polls').addColumn('polls', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
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
