import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE } from './admin-repository.ts';

export interface CorrectionCounts {
  /** null: OKMs whose last poll was answered {} or that never polled. */
  lastCorrection: string | null;
  okms: number;
  neverPolled: number;
  overdue: number;
}

export interface VersionCount {
  version: string;
  okms: number;
}

export interface SummaryScope {
  /** undefined: every OKM, whichever customer holds it (an operator's view). */
  customerId?: number;
  fleetPollingInterval: number;
  now: number;
}

/** The column of the version each firmware kind's device last reported. */
const REPORTED_VERSION_COLUMN = {
  kas: 'firmware_version',
  batch_key: 'batch_key_firmware_version',
  wireless_key: 'wireless_key_firmware_version',
} as const satisfies Record<FirmwareKind, string>;

/**
 * One pass over okms_drift_idx (it covers every column read here): counts per last correction.
 * Grouped by customer too, in the index's order, so that SQLite aggregates as it walks the
 * index instead of sorting a million entries into a temporary tree; the few groups are
 * summed up here.
 */
export async function countByCorrection(db: Db, scope: SummaryScope): Promise<CorrectionCounts[]> {
  let query = db
    .selectFrom('okms')
    .select((eb) => [
      'last_correction',
      eb.fn.countAll<number | string>().as('okms'),
      // FILTER, not sum(CASE …): half the time on SQLite over a million index entries.
      sql<number | string>`count(*) filter (where last_sync_time is null)`.as('never_polled'),
      sql<number | string>`count(*) filter (where last_sync_time + ${MISSED_INTERVALS_UNTIL_OVERDUE * 1000} * coalesce(polling_interval, ${scope.fleetPollingInterval}) < ${scope.now})`.as(
        'overdue',
      ),
    ])
    .groupBy(['customer_id', 'last_correction']);
  if (scope.customerId !== undefined) query = query.where('customer_id', '=', scope.customerId);
  const totals = new Map<string | null, CorrectionCounts>();
  for (const row of await query.execute()) {
    const counts = totals.get(row.last_correction) ?? { lastCorrection: row.last_correction, okms: 0, neverPolled: 0, overdue: 0 };
    counts.okms += Number(row.okms);
    counts.neverPolled += Number(row.never_polled ?? 0);
    counts.overdue += Number(row.overdue ?? 0);
    totals.set(row.last_correction, counts);
  }
  return [...totals.values()];
}

/** How many OKMs last reported each version of one firmware kind, over the index on customer and version (grouped as above). */
export async function countByReportedVersion(db: Db, kind: FirmwareKind, scope: SummaryScope): Promise<VersionCount[]> {
  const column = REPORTED_VERSION_COLUMN[kind];
  let query = db
    .selectFrom('okms')
    .select((eb) => [eb.ref(column).as('version'), eb.fn.countAll<number | string>().as('okms')])
    .where(column, 'is not', null)
    .groupBy(['customer_id', column]);
  if (scope.customerId !== undefined) query = query.where('customer_id', '=', scope.customerId);
  const totals = new Map<string, number>();
  for (const row of await query.execute()) totals.set(row.version as string, (totals.get(row.version as string) ?? 0) + Number(row.okms));
  return [...totals].map(([version, okms]) => ({ version, okms }));
}

export async function countPendingOkms(db: Db): Promise<number> {
  const row = await db.selectFrom('pending_okms').select((eb) => eb.fn.countAll<number | string>().as('pending')).executeTakeFirstOrThrow();
  return Number(row.pending);
}
