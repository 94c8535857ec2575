import { createHash } from 'node:crypto';
import { localMinutes } from '../shared/time-zone.ts';

export const ROLLOUT_STATES = ['ready', 'running', 'paused', 'finished', 'aborted'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export const MEMBER_STATUSES = ['scheduled', 'offered', 'updated', 'failed'] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];
export type GroupCounts = Record<MemberStatus, number>;

export const emptyCounts = (): GroupCounts => ({ scheduled: 0, offered: 0, updated: 0, failed: 0 });
export const sizeOf = (counts: GroupCounts) => counts.scheduled + counts.offered + counts.updated + counts.failed;

/**
 * What the API says of a member: its stored status, except for a member still scheduled in a
 * started group (contract §13, §15; repository.memberState decides it): `silent` when its OKM
 * has not polled since its group started, `blocked` when it has but is stuck on a resolver (one
 * before the rollout's answers every poll, so the offer is never sent). An offered, updated or
 * failed member has polled since.
 */
export const MEMBER_STATES = ['scheduled', 'blocked', 'silent', 'offered', 'updated', 'failed'] as const;
export type MemberState = (typeof MEMBER_STATES)[number];
export type StateCounts = Record<MemberState, number>;
export const emptyStateCounts = (): StateCounts => ({ scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 0 });
/** The members counted, whatever their state. */
export const memberTotal = (counts: StateCounts) => MEMBER_STATES.reduce((sum, state) => sum + counts[state], 0);

/**
 * When each started group started, by group index: what the rollout recorded, each group it
 * started without a record (before group start times were kept) taken to have started with the
 * rollout, which counts an OKM silent less often, never more.
 */
export function groupStarts(rollout: { group_started_at: string | null; current_group: number; started_at: number | null }): number[] {
  const recorded = rollout.group_started_at === null ? [] : (JSON.parse(rollout.group_started_at) as number[]);
  return Array.from({ length: rollout.current_group + 1 }, (_, group) => Number(recorded[group] ?? rollout.started_at ?? 0));
}

export const GROUP_STATES = ['waiting', 'running', 'paused', 'completed', 'aborted'] as const;
export type GroupState = (typeof GROUP_STATES)[number];

/**
 * A group's state in the rollout's: completed once the next group started (or the rollout
 * finished); a group that had not completed when the rollout was aborted is aborted, whether it
 * had started or not; the current group of a paused rollout is paused.
 */
export function groupState(rollout: { state: RolloutState; current_group: number }, group: number): GroupState {
  if (rollout.state === 'finished' || group < rollout.current_group) return 'completed';
  if (rollout.state === 'aborted') return 'aborted';
  if (group > rollout.current_group) return 'waiting';
  return rollout.state === 'paused' ? 'paused' : 'running';
}

/** A daily window in minutes after local midnight; from > to spans midnight (22:00–06:00). */
export interface MaintenanceWindow {
  from: number;
  to: number;
}

/**
 * The group of each member, in rank order: group i holds the ranks from the previous
 * group's cumulative share of `total` up to its own (percents are cumulative: 1, 10, 100
 * reach 1 %, then 10 %, then all). Rounding up, so a started group is never empty while
 * OKMs remain.
 */
export function groupBoundaries(total: number, cumulativePercents: readonly number[]): number[] {
  return cumulativePercents.map((percent) => Math.min(total, Math.ceil((total * percent) / 100)));
}

/**
 * The rank of a serial number: a hash, so that each group is spread over the fleet (every
 * store chain, every batch of serials) rather than taken in serial order, and the same OKM
 * always lands at the same place (membership is reproducible).
 */
export const memberRank = (serialNumber: string) => createHash('sha256').update(serialNumber).digest('hex');

/** Serial numbers assigned to groups: ordered by rank, cut at the cumulative boundaries. */
export function assignGroups(serialNumbers: readonly string[], cumulativePercents: readonly number[]): { serialNumber: string; group: number }[] {
  const ranked = serialNumbers.map((serialNumber) => ({ serialNumber, rank: memberRank(serialNumber) }));
  ranked.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  const boundaries = groupBoundaries(ranked.length, cumulativePercents);
  let group = 0;
  return ranked.flatMap(({ serialNumber }, index) => {
    while (group < boundaries.length && index >= boundaries[group]!) group++;
    return group < boundaries.length ? [{ serialNumber, group }] : [];
  });
}

/** A group has passed when at least success_threshold % of it has updated (an empty group has). */
export const groupPassed = (counts: GroupCounts, successThreshold: number) => counts.updated * 100 >= successThreshold * sizeOf(counts);

/** More than error_threshold % of the group has failed. */
export const groupFailing = (counts: GroupCounts, errorThreshold: number) => counts.failed * 100 > errorThreshold * sizeOf(counts);

/** "22:00" → 1320; undefined unless HH:MM of a 24-hour clock. */
export function parseClockTime(text: string): number | undefined {
  const match = /^([01][0-9]|2[0-3]):([0-5][0-9])$/.exec(text);
  return match ? Number(match[1]) * 60 + Number(match[2]) : undefined;
}

export const formatClockTime = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** Whether `now` falls in the window (from inclusive, to exclusive); from = to is the whole day. */
export function withinWindow(window: MaintenanceWindow, timeZone: string, now: number): boolean {
  if (window.from === window.to) return true;
  const minutes = localMinutes(now, timeZone);
  return window.from < window.to ? minutes >= window.from && minutes < window.to : minutes >= window.from || minutes < window.to;
}

/**
 * When an OKM polling every `ownSeconds` (null: the fleet's `fleetSeconds`) has had one interval
 * since `startedAt`: before then, no poll since its group started is no silence yet (waiting
 * for its first poll). Clamped as the poll clamps the interval it sends (5 s to 1 h).
 */
export const firstPollDue = (startedAt: number, ownSeconds: number | null, fleetSeconds: number) => startedAt + Math.min(3600, Math.max(5, ownSeconds ?? fleetSeconds)) * 1000;
