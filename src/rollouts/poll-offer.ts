import type { Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { FirmwareReleasesTable } from '../db/schema.ts';
import { toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import { compareFirmwareVersions, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import type { ReportedState } from '../device/reported.ts';
import type { Correction } from '../device/resolvers/types.ts';
import { retryPolicyFromWire, type RetryPolicy, type RetryPolicyWire } from '../shared/retry-policy.ts';
import { withinWindow, type MemberStatus } from './model.ts';

/** The rollout an OKM is in, as its poll sees it. */
export interface RolloutOffer {
  rolloutId: number;
  kind: FirmwareKind;
  release: FirmwareRelease;
  /** The rollout offers its version now: running or finished, its current group at or past the OKM's, and inside its maintenance window. */
  offering: boolean;
  memberStatus: MemberStatus;
  /** The rollout's own retry policy of its offers; null: the customer's or the fleet's. */
  retryPolicy: RetryPolicy | null;
}

type OfferRow = Selectable<FirmwareReleasesTable> & {
  serial_number: string;
  rollout_id: number;
  state: string;
  current_group: number;
  group_index: number;
  window_from: number | null;
  window_to: number | null;
  status: string;
  time_zone: string | null;
  retry_policy: string | null;
};

/** Who asks for a rollout offer: an OKM whose row names a rollout, at the time of its poll. */
export interface RolloutMember {
  rolloutId: number;
  serialNumber: string;
  now: number;
}

/**
 * The rollout offers for a batch of OKMs whose rows name a rollout, by serial, in one read by
 * primary keys: each OKM's rollout, its membership, the release, and the time zone of its
 * customer for the maintenance window. An OKM whose release left the catalog has none.
 */
export async function findRolloutOffers(db: Db, members: readonly RolloutMember[]): Promise<Map<string, RolloutOffer>> {
  const offers = new Map<string, RolloutOffer>();
  if (members.length === 0) return offers;
  const rows: OfferRow[] = await db
    .selectFrom('okms')
    .innerJoin('rollouts', 'rollouts.id', 'okms.rollout_id')
    .innerJoin('rollout_members', (join) =>
      join.onRef('rollout_members.rollout_id', '=', 'okms.rollout_id').onRef('rollout_members.serial_number', '=', 'okms.serial_number'),
    )
    .innerJoin('firmware_releases', (join) => join.onRef('firmware_releases.kind', '=', 'rollouts.kind').onRef('firmware_releases.version', '=', 'rollouts.version'))
    .leftJoin('customers', 'customers.id', 'okms.customer_id')
    .selectAll('firmware_releases')
    .select([
      'okms.serial_number',
      'rollouts.id as rollout_id',
      'rollouts.state',
      'rollouts.current_group',
      'rollout_members.group_index',
      'rollouts.window_from',
      'rollouts.window_to',
      'rollout_members.status',
      'customers.time_zone',
      'rollouts.retry_policy',
    ])
    .where(
      'okms.serial_number',
      'in',
      members.map((member) => member.serialNumber),
    )
    .execute();
  const asked = new Map(members.map((member) => [member.serialNumber, member]));
  for (const row of rows) {
    const member = asked.get(row.serial_number);
    // The row's rollout is the one the poll read in its own transaction; another means the row moved meanwhile.
    if (!member || member.rolloutId !== row.rollout_id) continue;
    const inWindow = row.window_from === null || row.window_to === null || withinWindow({ from: row.window_from, to: row.window_to }, row.time_zone ?? 'UTC', member.now);
    offers.set(row.serial_number, {
      rolloutId: member.rolloutId,
      kind: row.kind as FirmwareKind,
      release: toRelease(row),
      // A group's rows name the rollout just before it starts (repository.assignGroup): the group must have started.
      offering: (row.state === 'running' || row.state === 'finished') && row.group_index <= row.current_group && inWindow,
      memberStatus: row.status as MemberStatus,
      retryPolicy: row.retry_policy === null ? null : retryPolicyFromWire(JSON.parse(row.retry_policy) as RetryPolicyWire),
    });
  }
  return offers;
}

/** The rollout offer for one OKM whose row names a rollout; undefined if its release left the catalog. */
export async function findRolloutOffer(db: Db, rolloutId: number, serialNumber: string, now: number): Promise<RolloutOffer | undefined> {
  return (await findRolloutOffers(db, [{ rolloutId, serialNumber, now }])).get(serialNumber);
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

/** The reported value, and the resolver's reply key, of each kind's version. */
const REPORTED_VERSION: Record<FirmwareKind, keyof ReportedState> = { kas: 'kasFirmware', batch_key: 'batchKeyFirmware', wireless_key: 'wirelessKeyFirmware' };

/** The rollout's own retry policy for the offers of a resolver (a reply key), if it has one and offers that kind. */
export const rolloutRetryPolicy = (rollout: RolloutOffer | undefined, resolver: string): RetryPolicy | null =>
  rollout?.offering && REPORTED_VERSION[rollout.kind] === resolver ? rollout.retryPolicy : null;

/** What the poll changes in the OKM's rollout progress: updated, offered, or nothing (most polls). */
export function rolloutProgress(rollout: RolloutOffer, reported: ReportedState, correction: Correction): 'updated' | 'offered' | null {
  const reportedParts = parseFirmwareVersion(reported[REPORTED_VERSION[rollout.kind]] as string | undefined);
  const target = parseFirmwareVersion(rollout.release.version)!;
  if (reportedParts && compareFirmwareVersions(reportedParts, target) >= 0) return 'updated';
  return rollout.memberStatus === 'scheduled' && REPORTED_VERSION[rollout.kind] in correction ? 'offered' : null;
}

/** A poll's step in its OKM's rollout, to record. */
export interface RolloutStep {
  serialNumber: string;
  rolloutId: number;
  progress: 'updated' | 'offered';
  now: number;
}

/**
 * Records a batch of polls' progress in their rollouts, in the polls' transaction: an OKM
 * that reports the version (or newer) is updated and leaves the rollout (its later polls read
 * nothing more); one offered the version for the first time is offered. One statement per
 * rollout and step (two for updated), however many OKMs took it.
 */
export async function recordRolloutProgress(db: Db, steps: readonly RolloutStep[]): Promise<void> {
  const groups = new Map<string, RolloutStep[]>();
  for (const step of steps) {
    const key = `${step.rolloutId}/${step.progress}`;
    groups.set(key, [...(groups.get(key) ?? []), step]);
  }
  for (const group of groups.values()) {
    const { rolloutId, progress } = group[0]!;
    // One time for the group: the polls of a batch are answered together.
    const now = Math.max(...group.map((step) => step.now));
    const serials = group.map((step) => step.serialNumber);
    const members = db.updateTable('rollout_members').where('rollout_id', '=', rolloutId).where('serial_number', 'in', serials);
    if (progress === 'offered') {
      await members.set({ status: 'offered', offered_at: now, status_changed_at: now }).where('status', '=', 'scheduled').execute();
      continue;
    }
    await members.set({ status: 'updated', status_changed_at: now }).where('status', '!=', 'updated').execute();
    await db.updateTable('okms').set({ rollout_id: null }).where('serial_number', 'in', serials).where('rollout_id', '=', rolloutId).execute();
  }
}
