import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { AnyDb } from '../db/migrate.ts';
import type { FleetSummaryGroupColumns } from '../db/schema.ts';

/**
 * The fleet summary's counts, kept on write (SPEC section 11: under 200 ms with 1 M OKMs; a
 * walk of every OKM's index entry took 180 ms alone).
 *
 * `fleet_summary_counts` holds how many OKMs each group has: the OKMs of one customer that
 * share a last correction, the three reported firmware versions, whether they never polled
 * and whether the overdue sweep has marked them. Triggers on `okms` (migration 0017) keep it
 * whoever writes, but only APPEND to `fleet_summary_deltas` (+1 to the group a row enters,
 * -1 to the one it leaves): on PostgreSQL, poll batches that run at once would queue behind
 * each other's lock on a shared count row, and deadlock when they touch two groups in
 * opposite orders; appends lock nothing another writer waits for. A reader adds the pending
 * deltas to the counts, in one statement (one snapshot); the folder of every server process
 * (fleet-summary-folder.ts) moves them into the counts, a bounded step at a time.
 *
 * What is time-dependent (overdue before the sweep marks it) is not counted here: see
 * fleet-summary-repository.ts.
 */
/** What a group is within one customer's OKMs (or within all of them, for the summary of every OKM). */
export const GROUP_COLUMNS_WITHIN_CUSTOMER = [
  'last_correction',
  'firmware_version',
  'batch_key_firmware_version',
  'wireless_key_firmware_version',
  'never_polled',
  'marked_overdue',
] as const satisfies readonly (keyof FleetSummaryGroupColumns)[];

export const GROUP_COLUMNS = ['customer_id', ...GROUP_COLUMNS_WITHIN_CUSTOMER] as const satisfies readonly (keyof FleetSummaryGroupColumns)[];

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
export function fleetSummaryTriggers(dialect: DialectStrategy): string[] {
  const [newGroup, oldGroup] = [groupOf('NEW'), groupOf('OLD')];
  // Every poll SETs last_sync_time, one of the grouped columns: this condition, not the column
  // list, is what spares it (PostgreSQL tests it without calling the trigger's function).
  const movedToAnotherGroup = oldGroup.map((value, index) => `(${value}) IS DISTINCT FROM (${newGroup[index]})`).join(' OR ');
  return [
    ...dialect.rowTrigger({ name: 'okms_fleet_summary_insert', table: 'okms', event: 'INSERT', statements: [appendDeltas([{ row: 'NEW', okms: 1 }])] }),
    ...dialect.rowTrigger({ name: 'okms_fleet_summary_delete', table: 'okms', event: 'DELETE', statements: [appendDeltas([{ row: 'OLD', okms: -1 }])] }),
    ...dialect.rowTrigger({
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

/**
 * Deltas one fold step moves at most, in one transaction. On SQLite the step holds the one
 * connection, so every request waits for it: 10 000 a step took about 45 ms (90 ms on a busy
 * host) and, after a bulk load or an enrolment wave, put that on the p99 of every page read
 * between steps (bench/RESULTS.md, 2026-11-23, 14:06–16:26 UTC). 2 000 keep a step near 10 ms and
 * still fold tens of thousands a second, more than enrolment appends.
 */
export const DELTAS_PER_FOLD = 2_000;

type GroupKey = FleetSummaryGroupColumns;

/**
 * One step of the fold: takes (deletes) up to `limit` of the oldest deltas and adds them to
 * the counts of their groups, in one transaction; returns how many it took. The fold is
 * claimed first by locking the one row of `fleet_summary_folder`: on PostgreSQL a second
 * folder (another process) skips it and returns 0 rather than waiting; on SQLite the claim
 * is the transaction's write lock. Deltas are taken by the DELETE that returns them, so that
 * a delta whose writer commits meanwhile is either taken and counted, or left for the next
 * step; readers see the deltas or their sums in the counts, never both (one commit).
 */
export async function foldFleetSummaryDeltas(db: Db, dialect: DialectStrategy, limit = DELTAS_PER_FOLD): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('fleet_summary_folder')
      .set((eb) => ({ id: eb.ref('id') }))
      .where('id', 'in', dialect.skipRowsClaimedByOthers(trx.selectFrom('fleet_summary_folder').select('id')))
      .returning('id')
      .executeTakeFirst();
    if (claimed === undefined) return 0;
    const taken = await trx
      .deleteFrom('fleet_summary_deltas')
      .where('id', 'in', trx.selectFrom('fleet_summary_deltas').select('id').orderBy('id').limit(limit))
      .returning([...GROUP_COLUMNS, 'okms'])
      .execute();
    const sums = new Map<string, { group: GroupKey; okms: number }>();
    for (const { okms, ...group } of taken) {
      const key = JSON.stringify(GROUP_COLUMNS.map((column) => group[column]));
      const sum = sums.get(key) ?? sums.set(key, { group, okms: 0 }).get(key)!;
      sum.okms += Number(okms);
    }
    for (const { group, okms } of sums.values()) {
      if (okms === 0) continue;
      const updated = await trx
        .updateTable('fleet_summary_counts')
        .set((eb) => ({ okms: eb('okms', '+', okms) }))
        .where((eb) => eb.and(GROUP_COLUMNS.map((column) => eb(column, 'is not distinct from', group[column]))))
        .executeTakeFirst();
      // Only the folder writes counts, and it holds the claim: no other insert of the group can race this one.
      if (Number(updated.numUpdatedRows) === 0) await trx.insertInto('fleet_summary_counts').values({ ...group, okms }).execute();
    }
    if (sums.size > 0) await trx.deleteFrom('fleet_summary_counts').where('okms', '=', 0).execute();
    return taken.length;
  });
}
