import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { GROUP_COLUMNS, GROUP_COLUMNS_WITHIN_CUSTOMER } from './fleet-summary-counts.ts';
import type { OverdueClock } from './fleet-states.ts';

/** The OKMs of one customer (or of all) that share a last correction and the three reported firmware versions. */
export interface SummaryGroup {
  /** null: OKMs whose last poll was answered {} or that never polled. */
  lastCorrection: string | null;
  /** The versions last reported (kasFirmware, batchKeyFirmware, wirelessKeyFirmware); null: none. */
  versions: Record<FirmwareKind, string | null>;
  okms: number;
  neverPolled: number;
  /** Those the overdue sweep has marked. */
  markedOverdue: number;
}

export interface SummaryScope extends OverdueClock {
  /** undefined: every OKM, whichever customer holds it (an operator's view). */
  customerId?: number;
}

/**
 * The groups of the scope as the counts kept on write have them (fleet-summary-counts.ts):
 * each group's count plus its deltas not folded yet, in one statement, so that a fold
 * committing meanwhile is seen whole or not at all. It reads as many rows as there are groups
 * and pending deltas, whatever the size of the fleet.
 */
export async function summaryGroups(db: Db, scope: SummaryScope): Promise<SummaryGroup[]> {
  const rows = await db
    .selectFrom(keptRows(db, { customerId: scope.customerId }).as('kept'))
    .select((eb) => [...GROUP_COLUMNS_WITHIN_CUSTOMER, eb.fn.sum<number | string>('okms').as('okms')])
    .groupBy([...GROUP_COLUMNS_WITHIN_CUSTOMER])
    .execute();
  return rows
    .map((row) => ({ row, okms: Number(row.okms) }))
    .filter(({ okms }) => okms !== 0)
    .map(({ row, okms }) => ({
      lastCorrection: row.last_correction,
      versions: { kas: row.firmware_version, batch_key: row.batch_key_firmware_version, wireless_key: row.wireless_key_firmware_version },
      okms,
      neverPolled: Number(row.never_polled) === 1 ? okms : 0,
      markedOverdue: Number(row.marked_overdue) === 1 ? okms : 0,
    }));
}

/** Which OKMs to count from the kept counts: each field left out matches every OKM. */
export interface KeptCountFilter {
  /** A customer's id; null: the OKMs without a customer; undefined: every OKM. */
  customerId?: number | null;
  /** Whether the last poll was answered with a correction (drifting) or not (in step, or never polled). */
  corrected?: boolean;
  neverPolled?: boolean;
  firmwareVersion?: string;
}

/**
 * How many OKMs match, summed over the groups of the kept counts and their pending deltas in
 * one statement: as many rows read as there are groups, however many OKMs match (the OKM
 * list's total for the filters a group is made of).
 */
export async function countKept(db: Db, filter: KeptCountFilter): Promise<number> {
  const row = await db
    .selectFrom(keptRows(db, filter).as('kept'))
    .select((eb) => eb.fn.sum<number | string | null>('okms').as('okms'))
    .executeTakeFirstOrThrow();
  return Number(row.okms ?? 0);
}

/** The kept counts of the groups that match, and their pending deltas: one query, to read in one statement. */
function keptRows(db: Db, filter: KeptCountFilter) {
  const keptIn = (table: 'fleet_summary_counts' | 'fleet_summary_deltas') => {
    let rows = db.selectFrom(table).select([...GROUP_COLUMNS, 'okms']);
    if (filter.customerId !== undefined) rows = rows.where('customer_id', filter.customerId === null ? 'is' : '=', filter.customerId);
    if (filter.corrected !== undefined) rows = rows.where('last_correction', filter.corrected ? 'is not' : 'is', null);
    if (filter.neverPolled !== undefined) rows = rows.where('never_polled', '=', filter.neverPolled ? 1 : 0);
    if (filter.firmwareVersion !== undefined) rows = rows.where('firmware_version', '=', filter.firmwareVersion);
    return rows;
  };
  return keptIn('fleet_summary_counts').unionAll(keptIn('fleet_summary_deltas'));
}

/**
 * The OKMs past their due_by time that the overdue sweep has not marked yet: the entries of
 * okms_due_by_idx before now, which are only those that fell silent since the sweep last ran.
 * The customer is tested on each such row rather than looked up in an index of the customer's
 * OKMs (the unary plus keeps both databases from choosing one), so that the cost follows the
 * past-due OKMs, not the customer's fleet.
 */
export async function countOverdueNotMarked(db: Db, scope: SummaryScope): Promise<number> {
  let query = db
    .selectFrom('okms')
    .select((eb) => eb.fn.countAll<number | string>().as('okms'))
    .where('overdue_at', 'is', null)
    .where('due_by', '<', scope.now);
  if (scope.customerId !== undefined) query = query.where(sql`+okms.customer_id`, '=', scope.customerId);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.okms);
}
