import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Db } from '../db/database.ts';
import { compareFirmwareVersions, FIRMWARE_KINDS, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import { summaryGroups, type SummaryScope } from './fleet-summary-repository.ts';
import { FLEET_STATES, isInState } from '../okm/fleet-states.ts';
import { countPendingOkms } from '../okm/pending-repository.ts';
import type { FleetSummary } from './schemas.ts';

export interface SummaryRequest {
  db: Db;
  principal: Principal;
  customerName: string | undefined;
  now: number;
}

/** Newest first; a version that is not a dotted number (devices report anything) after every one that is. */
interface VersionCount {
  version: string;
  okms: number;
}

function newestFirst(a: VersionCount, b: VersionCount): number {
  const [left, right] = [parseFirmwareVersion(a.version), parseFirmwareVersion(b.version)];
  if (left && right) return compareFirmwareVersions(right, left);
  if (left || right) return left ? -1 : 1;
  return a.version < b.version ? -1 : a.version > b.version ? 1 : 0;
}

/**
 * contract §11 and §15: the OKMs in each state (src/okm/fleet-states.ts), the drifting ones
 * by their last correction, and the versions reported. The counts are those of the last
 * complete fleet pass (fleet-pass.ts); the pending OKMs are counted now.
 */
export async function fleetSummary(request: SummaryRequest): Promise<FleetSummary> {
  const acting = await actingCustomer(request.db, request.principal, request.customerName);
  const scope: SummaryScope = acting === null ? {} : { customerId: acting.id };
  const [groups, pending] = await Promise.all([summaryGroups(request.db, scope), request.principal.isAdmin ? countPendingOkms(request.db) : undefined]);
  const okms = { total: 0, in_step: 0, drifting: 0, overdue: 0, never_polled: 0, stuck: 0 };
  const corrections: Record<string, number> = {};
  const versionCounts = Object.fromEntries(FIRMWARE_KINDS.map((kind) => [kind, new Map<string, number>()])) as Record<FirmwareKind, Map<string, number>>;
  for (const group of groups) {
    okms.total += group.okms;
    for (const state of FLEET_STATES) if (isInState(state, group.facts)) okms[state] += group.okms;
    const { lastCorrection } = group.facts;
    if (lastCorrection !== null) corrections[lastCorrection] = (corrections[lastCorrection] ?? 0) + group.okms;
    for (const kind of FIRMWARE_KINDS) {
      const version = group.versions[kind];
      if (version !== null) versionCounts[kind].set(version, (versionCounts[kind].get(version) ?? 0) + group.okms);
    }
  }
  const firmware = Object.fromEntries(
    FIRMWARE_KINDS.map((kind) => [kind, [...versionCounts[kind]].map(([version, count]) => ({ version, okms: count })).sort(newestFirst)]),
  ) as FleetSummary['firmware'];
  return { okms, ...(pending === undefined ? {} : { pending }), corrections, firmware };
}
