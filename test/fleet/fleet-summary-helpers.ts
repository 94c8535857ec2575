import type { Db } from '../../src/db/database.ts';

/**
 * The fleet summary counted here straight from the tables (okms, okm_polls, pending_okms), with
 * the states worked out in the test rather than read from the code, for comparison with what
 * the fleet pass counted (GET /api/v1/fleet/summary reads its snapshot).
 */

/** An OKM as the tables hold it: its okms row and, if it has polled, its last poll. */
export interface FleetRow {
  serial_number: string;
  customer_id: number | null;
  last_correction: string | null;
  firmware_version: string | null;
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
  polling_interval: number | null;
  overdue_at: number | null;
  last_sync_time: number | null;
  /** The resolver the poll found it stuck on; null: not stuck. */
  stuck_resolver: string | null;
}

export async function fleetRows(db: Db, customerId?: number): Promise<FleetRow[]> {
  let query = db
    .selectFrom('okms')
    .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
    .select([
      'okms.serial_number',
      'okms.customer_id',
      'okms.last_correction',
      'okms.firmware_version',
      'okms.batch_key_firmware_version',
      'okms.wireless_key_firmware_version',
      'okms.polling_interval',
      'okms.overdue_at',
      'okms.stuck_resolver',
      'okm_polls.last_sync_time',
    ]);
  if (customerId !== undefined) query = query.where('okms.customer_id', '=', customerId);
  const rows = await query.execute();
  const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return rows.map((row) => ({
    ...row,
    customer_id: numberOrNull(row.customer_id),
    polling_interval: numberOrNull(row.polling_interval),
    overdue_at: numberOrNull(row.overdue_at),
    last_sync_time: numberOrNull(row.last_sync_time),
  }));
}

/** Overdue (contract §5.2): 3 effective polling intervals (own, else the fleet's; 5 to 3600 s) after the last poll. */
export const dueTime = (row: Pick<FleetRow, 'last_sync_time' | 'polling_interval'>, fleetPollingInterval: number) =>
  row.last_sync_time! + 3 * 1000 * Math.min(3600, Math.max(5, row.polling_interval ?? fleetPollingInterval));

/** Never polled as an OKM: overdue_at 0 (created by the API or accepted from pending, no poll since). */
export const neverPolled = (row: FleetRow) => row.overdue_at === 0;

/** What the fleet pass should have marked by `passNow`: an OKM that has polled, silent past its due time. */
export const dueBefore = (passNow: number, fleetPollingInterval: number) => (row: FleetRow) =>
  !neverPolled(row) && row.last_sync_time !== null && dueTime(row, fleetPollingInterval) < passNow;

export interface CountedSummary {
  okms: { total: number; in_step: number; drifting: number; overdue: number; never_polled: number; stuck: number };
  corrections: Record<string, number>;
  /** Each kind's versions, sorted by version (the order the API gives is tested apart). */
  firmware: Record<'kas' | 'batch_key' | 'wireless_key', { version: string; okms: number }[]>;
}

/** The summary of these OKMs (contract §11), those `overdue` says counted overdue. */
export function countSummary(rows: readonly FleetRow[], overdue: (row: FleetRow) => boolean): CountedSummary {
  const okms = { total: rows.length, in_step: 0, drifting: 0, overdue: 0, never_polled: 0, stuck: 0 };
  const corrections: Record<string, number> = {};
  const versions = { kas: new Map<string, number>(), batch_key: new Map<string, number>(), wireless_key: new Map<string, number>() };
  for (const row of rows) {
    if (overdue(row)) okms.overdue++;
    if (neverPolled(row)) okms.never_polled++;
    if (row.stuck_resolver !== null) okms.stuck++;
    if (row.last_correction !== null) {
      okms.drifting++;
      corrections[row.last_correction] = (corrections[row.last_correction] ?? 0) + 1;
    } else if (!neverPolled(row)) okms.in_step++;
    const reported = { kas: row.firmware_version, batch_key: row.batch_key_firmware_version, wireless_key: row.wireless_key_firmware_version };
    for (const kind of ['kas', 'batch_key', 'wireless_key'] as const) {
      const version = reported[kind];
      if (version !== null) versions[kind].set(version, (versions[kind].get(version) ?? 0) + 1);
    }
  }
  const sorted = (counts: Map<string, number>) => [...counts].map(([version, count]) => ({ version, okms: count })).sort((a, b) => (a.version < b.version ? -1 : 1));
  return { okms, corrections, firmware: { kas: sorted(versions.kas), batch_key: sorted(versions.batch_key), wireless_key: sorted(versions.wireless_key) } };
}

/** A summary as GET /api/v1/fleet/summary answers it, its firmware lists sorted as countSummary's, and without `pending`. */
export function comparableSummary(data: CountedSummary & { pending?: number }): CountedSummary {
  const sorted = (list: { version: string; okms: number }[]) => [...list].sort((a, b) => (a.version < b.version ? -1 : 1));
  return {
    okms: data.okms,
    corrections: data.corrections,
    firmware: { kas: sorted(data.firmware.kas), batch_key: sorted(data.firmware.batch_key), wireless_key: sorted(data.firmware.wireless_key) },
  };
}

export async function pendingCount(db: Db): Promise<number> {
  const row = await db.selectFrom('pending_okms').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
