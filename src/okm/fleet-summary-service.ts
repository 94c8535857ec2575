import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import { compareFirmwareVersions, FIRMWARE_KINDS, parseFirmwareVersion } from '../firmware/version.ts';
import { countByCorrection, countByReportedVersion, countPendingOkms, type SummaryScope, type VersionCount } from './fleet-summary-repository.ts';
import type { FleetSummary } from './schemas.ts';

export interface SummaryRequest {
  db: Db;
  settings: Pick<Settings, 'fleetPollingInterval'>;
  principal: Principal;
  customerName: string | undefined;
  now: number;
}

/** Newest first; a version that is not a dotted number (devices report anything) after every one that is. */
function newestFirst(a: VersionCount, b: VersionCount): number {
  const [left, right] = [parseFirmwareVersion(a.version), parseFirmwareVersion(b.version)];
  if (left && right) return compareFirmwareVersions(right, left);
  if (left || right) return left ? -1 : 1;
  return a.version < b.version ? -1 : a.version > b.version ? 1 : 0;
}

/**
 * SPEC section 11. An OKM is in step when its last poll was answered {} (last_correction
 * null), drifting when a resolver corrected it (last_correction set), and never polled apart
 * from both; overdue counts across them.
 */
export async function fleetSummary(request: SummaryRequest): Promise<FleetSummary> {
  const acting = await actingCustomer(request.db, request.principal, request.customerName);
  const scope: SummaryScope = {
    ...(acting === null ? {} : { customerId: acting.id }),
    fleetPollingInterval: request.settings.fleetPollingInterval,
    now: request.now,
  };
  const [byCorrection, pending, ...firmware] = await Promise.all([
    countByCorrection(request.db, scope),
    request.principal.isAdmin ? countPendingOkms(request.db) : undefined,
    ...FIRMWARE_KINDS.map((kind) => countByReportedVersion(request.db, kind, scope)),
  ]);
  const okms = { total: 0, in_step: 0, drifting: 0, overdue: 0, never_polled: 0 };
  const corrections: Record<string, number> = {};
  for (const group of byCorrection) {
    okms.total += group.okms;
    okms.overdue += group.overdue;
    okms.never_polled += group.neverPolled;
    if (group.lastCorrection === null) okms.in_step += group.okms - group.neverPolled;
    else {
      okms.drifting += group.okms;
      corrections[group.lastCorrection] = group.okms;
    }
  }
  const versions = Object.fromEntries(
    FIRMWARE_KINDS.map((kind, index) => [kind, firmware[index]!.sort(newestFirst)]),
  ) as FleetSummary['firmware'];
  return { okms, ...(pending === undefined ? {} : { pending }), corrections, firmware: versions };
}
