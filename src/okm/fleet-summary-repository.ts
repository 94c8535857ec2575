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

/** One pass over okms_drift_idx (it covers every column read here): counts per last correction. */
export async function countByCorrection(db: Db, scope: SummaryScope): Promise<CorrectionCounts[]> {
  let query = db
    .selectFrom('okms')
    .select((eb) => [
      'last_correction',
      eb.fn.countAll<number | string>().as('okms'),
      sql<number | string>`sum(case when last_sync_time is null then 1 else 0 end)`.as('never_polled'),
      sql<number | string>`sum(case when last_sync_time + ${MISSED_INTERVALS_UNTIL_OVERDUE * 1000} * coalesce(polling_interval, ${scope.fleetPollingInterval}) < ${scope.now} then 1 else 0 end)`.as(
        'overdue',
      ),
    ])
    .groupBy('last_correction');
  if (scope.customerId !== undefined) query = query.where('customer_id', '=', scope.customerId);
  const rows = await query.execute();
  return rows.map((row) => ({
    lastCorrection: row.last_correction,
    okms: Number(row.okms),
    neverPolled: Number(row.never_polled ?? 0),
    overdue: Number(row.overdue ?? 0),
  }));
}

/** How many OKMs last reported each version of one firmware kind (an index on customer and version). */
export async function countByReportedVersion(db: Db, kind: FirmwareKind, scope: SummaryScope): Promise<VersionCount[]> {
  const column = REPORTED_VERSION_COLUMN[kind];
  let query = db
    .selectFrom('okms')
    .select((eb) => [eb.ref(column).as('version'), eb.fn.countAll<number | string>().as('okms')])
    .where(column, 'is not', null)
    .groupBy(column);
  if (scope.customerId !== undefined) query = query.where('customer_id', '=', scope.customerId);
  const rows = await query.execute();
  return rows.map((row) => ({ version: row.version as string, okms: Number(row.okms) }));
}

export async function countPendingOkms(db: Db): Promise<number> {
  const row = await db.selectFrom('pending_okms').select((eb) => eb.fn.countAll<number | string>().as('pending')).executeTakeFirstOrThrow();
  return Number(row.pending);
}
