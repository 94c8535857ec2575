import type { Db } from '../db/database.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import type { StateFacts } from '../okm/fleet-states.ts';
import { FLEET_PASS } from './fleet-pass.ts';

/** The OKMs of one customer (or of all) that share the facts of their state and the three reported firmware versions. */
export interface SummaryGroup {
  /** As the fleet pass read them: overdue as it found them, stuck as their last poll left them. */
  facts: StateFacts;
  /** The versions last reported (kasFirmware, batchKeyFirmware, wirelessKeyFirmware); null: none. */
  versions: Record<FirmwareKind, string | null>;
  okms: number;
}

export interface SummaryScope {
  /** undefined: every OKM, whichever customer holds it (an operator's view). */
  customerId?: number;
}

/**
 * The groups of the scope as the last complete fleet pass counted them (fleet-pass.ts): as
 * many rows as there are groups, whatever the size of the fleet, replaced whole by each pass.
 */
export async function summaryGroups(db: Db, scope: SummaryScope): Promise<SummaryGroup[]> {
  let query = db.selectFrom('fleet_summary_snapshot').selectAll();
  if (scope.customerId !== undefined) query = query.where('customer_id', '=', scope.customerId);
  const rows = await query.execute();
  return rows.map((row) => ({
    facts: { lastCorrection: row.last_correction, neverPolled: Number(row.never_polled) === 1, overdue: Number(row.overdue) === 1, stuck: Number(row.stuck) === 1 },
    versions: { kas: row.firmware_version, batch_key: row.batch_key_firmware_version, wireless_key: row.wireless_key_firmware_version },
    okms: Number(row.okms),
  }));
}

/** When the fleet pass last completed (the summary's age); null: never yet. */
export async function lastFleetPassAt(db: Db): Promise<number | null> {
  const row = await db.selectFrom('background_passes').select('completed_at').where('name', '=', FLEET_PASS).executeTakeFirst();
  return row?.completed_at === null || row?.completed_at === undefined ? null : Number(row.completed_at);
}
