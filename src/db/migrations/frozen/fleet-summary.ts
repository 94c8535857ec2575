import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from '../migration-context.ts';
import { rowTrigger } from './dialect.ts';

/**
 * FROZEN. The fleet summary's triggers and recount, copied from src/okm/fleet-summary-counts.ts
 * for use by migration 0017 only. Never edit it: the databases that migration built have the
 * triggers it generates, and a database migrated later must get exactly the same. A change to
 * the fleet summary's triggers is a new migration with SQL of its own.
 *
 * Triggers on okms append +1 to the group a row enters and -1 to the one it leaves in
 * fleet_summary_deltas; the counts per group are in fleet_summary_counts.
 */

/** The columns of a group, in fleet_summary_counts and fleet_summary_deltas. */
export const GROUP_COLUMNS = [
  'customer_id',
  'last_correction',
  'firmware_version',
  'batch_key_firmware_version',
  'wireless_key_firmware_version',
  'never_polled',
  'marked_overdue',
] as const;

/** The okms columns a group is made of: an UPDATE that SETs none of them moves no OKM to another group. */
const OKM_COLUMNS_GROUPED_ON = [
  'customer_id',
  'last_correction',
  'firmware_version',
  'batch_key_firmware_version',
  'wireless_key_firmware_version',
  'last_sync_time',
  'overdue_at',
] as const;

/** The group of an okms row (NEW, OLD, or the table itself), as SQL values in the order of GROUP_COLUMNS. */
function groupOf(row: string): string[] {
  return [
    `${row}.customer_id`,
    `${row}.last_correction`,
    `${row}.firmware_version`,
    `${row}.batch_key_firmware_version`,
    `${row}.wireless_key_firmware_version`,
    `CASE WHEN ${row}.last_sync_time IS NULL THEN 1 ELSE 0 END`,
    `CASE WHEN ${row}.overdue_at > 0 THEN 1 ELSE 0 END`,
  ];
}

const appendDeltas = (deltas: { row: 'NEW' | 'OLD'; okms: 1 | -1 }[]) =>
  `INSERT INTO fleet_summary_deltas (${GROUP_COLUMNS.join(', ')}, okms) VALUES ${deltas.map(({ row, okms }) => `(${groupOf(row).join(', ')}, ${okms})`).join(', ')}`;

/** The statements that create the triggers appending the deltas of every write to okms. */
export function fleetSummaryTriggers(context: MigrationContext): string[] {
  const [newGroup, oldGroup] = [groupOf('NEW'), groupOf('OLD')];
  // Every poll SETs last_sync_time, one of the grouped columns: this condition, not the column
  // list, is what spares it (PostgreSQL tests it without calling the trigger's function).
  const movedToAnotherGroup = oldGroup.map((value, index) => `(${value}) IS DISTINCT FROM (${newGroup[index]})`).join(' OR ');
  return [
    ...rowTrigger(context, { name: 'okms_fleet_summary_insert', table: 'okms', event: 'INSERT', statements: [appendDeltas([{ row: 'NEW', okms: 1 }])] }),
    ...rowTrigger(context, { name: 'okms_fleet_summary_delete', table: 'okms', event: 'DELETE', statements: [appendDeltas([{ row: 'OLD', okms: -1 }])] }),
    ...rowTrigger(context, {
      name: 'okms_fleet_summary_update',
      table: 'okms',
      event: 'UPDATE',
      columns: OKM_COLUMNS_GROUPED_ON,
      when: movedToAnotherGroup,
      statements: [
        appendDeltas([
          { row: 'OLD', okms: -1 },
          { row: 'NEW', okms: 1 },
        ]),
      ],
    }),
  ];
}

/** Counts every group afresh from okms, for rows written while the triggers did not exist (a migration's existing rows). */
export async function recountFleetSummary(db: AnyDb): Promise<void> {
  await sql`DELETE FROM fleet_summary_deltas`.execute(db);
  await sql`DELETE FROM fleet_summary_counts`.execute(db);
  await sql`INSERT INTO fleet_summary_counts (${sql.raw(GROUP_COLUMNS.join(', '))}, okms)
    SELECT ${sql.raw(groupOf('okms').join(', '))}, count(*) FROM okms
    GROUP BY ${sql.raw(groupOf('okms').join(', '))}`.execute(db);
}
