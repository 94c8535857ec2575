import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * The states of the fleet summary (SPEC section 11), which the OKM list filters on too: in
 * step (the last poll was answered {}), drifting (it was answered with a correction), never
 * polled (neither), and overdue (polled before but not for MISSED_INTERVALS_UNTIL_OVERDUE
 * effective polling intervals), which counts across in step and drifting.
 *
 * Overdue is read from due_by, which each poll sets to its time plus that many of the
 * effective polling intervals in effect then, as the overdue sweep does (okm.overdue): an OKM
 * is overdue once the sweep has marked it (overdue_at set, until its next poll), or when its
 * due_by has passed and the sweep has not got to it yet. So a change of the fleet polling
 * interval, or of the OKM's own, moves when an OKM becomes overdue from its next poll on, as
 * it does for the device, which learns the new interval from that poll (docs/decisions.md).
 */
export const FLEET_STATES = ['in_step', 'drifting', 'overdue', 'never_polled'] as const;
export type FleetState = (typeof FLEET_STATES)[number];

/** An OKM is overdue when it has polled before but not for this many effective polling intervals. */
export const MISSED_INTERVALS_UNTIL_OVERDUE = 3;

/** What overdue is measured against. */
export interface OverdueClock {
  now: number;
}

/** See above; overdueAt 0 marks an OKM that never polled as one (it has no due_by yet). */
export function isOverdue(okm: { dueBy: number | null; overdueAt: number | null }, now: number): boolean {
  return okm.overdueAt === null ? okm.dueBy !== null && okm.dueBy < now : okm.overdueAt > 0;
}

const neverPolled = sql<SqlBool>`okms.last_sync_time is null`;

/**
 * The state as a condition on the okms row; never NULL, so that its negation holds where it
 * does not. The page buckets of the OKMs by state (OKM_STATE_LIST) hold in_step, drifting and
 * never_polled as SQL of their own in their triggers: change both together.
 */
export function fleetStateCondition(state: FleetState, clock: OverdueClock): RawBuilder<SqlBool> {
  switch (state) {
    case 'never_polled':
      return neverPolled;
    case 'in_step':
      return sql<SqlBool>`(okms.last_correction is null and okms.last_sync_time is not null)`;
    case 'drifting':
      return sql<SqlBool>`okms.last_correction is not null`;
    case 'overdue':
      // Two index ranges of the overdue OKMs alone (okms_marked_overdue_idx, okms_due_by_idx),
      // rather than a test of every row: the cost follows the OKMs overdue, not the fleet.
      return sql<SqlBool>`okms.serial_number in (
        select marked.serial_number from okms as marked where marked.overdue_at > 0
        union all
        select past_due.serial_number from okms as past_due where past_due.overdue_at is null and past_due.due_by < ${clock.now})`;
  }
}
