import type { Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { FirmwareReleasesTable } from '../db/schema.ts';
import { toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import { compareFirmwareVersions, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import type { ReportedState } from '../okm/reported.ts';
import type { Correction } from '../okm/resolvers/types.ts';
import { withinWindow, type MemberStatus } from './model.ts';

/** The rollout an OKM is in, as its poll sees it. */
export interface RolloutOffer {
  rolloutId: number;
  kind: FirmwareKind;
  release: FirmwareRelease;
  /** The rollout offers its version now: running or finished, its current group at or past the OKM's, and inside its maintenance window. */
  offering: boolean;
  memberStatus: MemberStatus;
}

type OfferRow = Selectable<FirmwareReleasesTable> & {
  state: string;
  current_group: number;
  group_index: number;
  window_from: number | null;
  window_to: number | null;
  status: string;
  time_zone: string | null;
};

// One indexed read (primary keys only): the rollout, the OKM's membership, the release, and
// the time zone of the OKM's customer for the maintenance window.
const rolloutOfferQuery = precompiledQuery<OfferRow, [number, string]>(2, (db, [rolloutId, serialNumber]) =>
  db
    .selectFrom('rollouts')
    .innerJoin('rollout_members', (join) =>
      join.onRef('rollout_members.rollout_id', '=', 'rollouts.id').on('rollout_members.serial_number', '=', serialNumber as string),
    )
    .innerJoin('firmware_releases', (join) => join.onRef('firmware_releases.kind', '=', 'rollouts.kind').onRef('firmware_releases.version', '=', 'rollouts.version'))
    .innerJoin('okms', 'okms.serial_number', 'rollout_members.serial_number')
    .leftJoin('customers', 'customers.id', 'okms.customer_id')
    .selectAll('firmware_releases')
    .select(['rollouts.state', 'rollouts.current_group', 'rollout_members.group_index', 'rollouts.window_from', 'rollouts.window_to', 'rollout_members.status', 'customers.time_zone'])
    .where('rollouts.id', '=', rolloutId as number),
);

/** The rollout offer for an OKM whose row names a rollout; undefined if its release left the catalog. */
export async function findRolloutOffer(db: Db, rolloutId: number, serialNumber: string, now: number): Promise<RolloutOffer | undefined> {
  const { rows } = await rolloutOfferQuery(db, rolloutId, serialNumber);
  const row = rows[0];
  if (!row) return undefined;
  const inWindow = row.window_from === null || row.window_to === null || withinWindow({ from: row.window_from, to: row.window_to }, row.time_zone ?? 'UTC', now);
  return {
    rolloutId,
    kind: row.kind as FirmwareKind,
    release: toRelease(row),
    // A group's rows name the rollout just before it starts (repository.assignGroup): the group must have started.
    offering: (row.state === 'running' || row.state === 'finished') && row.group_index <= row.current_group && inWindow,
    memberStatus: row.status as MemberStatus,
  };
}

const newer = (a: FirmwareRelease, b: FirmwareRelease | undefined) => {
  const [aParts, bParts] = [parseFirmwareVersion(a.version), parseFirmwareVersion(b?.version)];
  return !b || !bParts || (aParts && compareFirmwareVersions(aParts, bParts) > 0) ? a : b;
};

/**
 * The releases the OKM is offered with its rollout: the rollout's version for its kind while
 * the rollout offers it, unless the OKM has its own pin of the kind (the pin wins) or the
 * fleet latest is newer still (never a step back from what the fleet gets).
 */
export function withRolloutOffer(
  releases: Partial<Record<FirmwareKind, FirmwareRelease>>,
  pins: Record<FirmwareKind, string | null>,
  rollout: RolloutOffer | undefined,
): Partial<Record<FirmwareKind, FirmwareRelease>> {
  if (!rollout?.offering || pins[rollout.kind] !== null) return releases;
  return { ...releases, [rollout.kind]: newer(rollout.release, releases[rollout.kind]) };
}

const REPORTED_VERSION: Record<FirmwareKind, keyof ReportedState> = { kas: 'kasFirmware', batch_key: 'batchKeyFirmware', wireless_key: 'wirelessKeyFirmware' };

/** What the poll changes in the OKM's rollout progress: updated, offered, or nothing (most polls). */
export function rolloutProgress(rollout: RolloutOffer, reported: ReportedState, correction: Correction): 'updated' | 'offered' | null {
  const reportedParts = parseFirmwareVersion(reported[REPORTED_VERSION[rollout.kind]] as string | undefined);
  const target = parseFirmwareVersion(rollout.release.version)!;
  if (reportedParts && compareFirmwareVersions(reportedParts, target) >= 0) return 'updated';
  return rollout.memberStatus === 'scheduled' && REPORTED_VERSION[rollout.kind] in correction ? 'offered' : null;
}

/**
 * Records the poll's progress in the rollout, in the poll's transaction: an OKM that reports
 * the version (or newer) is updated and leaves the rollout (its later polls read nothing
 * more); one offered the version for the first time is offered.
 */
export async function recordRolloutProgress(db: Db, serialNumber: string, rollout: RolloutOffer, progress: 'updated' | 'offered', now: number): Promise<void> {
  if (progress === 'offered') {
    await db
      .updateTable('rollout_members')
      .set({ status: 'offered', offered_at: now, status_changed_at: now })
      .where('rollout_id', '=', rollout.rolloutId)
      .where('serial_number', '=', serialNumber)
      .where('status', '=', 'scheduled')
      .execute();
    return;
  }
  await db
    .updateTable('rollout_members')
    .set({ status: 'updated', status_changed_at: now })
    .where('rollout_id', '=', rollout.rolloutId)
    .where('serial_number', '=', serialNumber)
    .where('status', '!=', 'updated')
    .execute();
  await db.updateTable('okms').set({ rollout_id: null }).where('serial_number', '=', serialNumber).where('rollout_id', '=', rollout.rolloutId).execute();
}
