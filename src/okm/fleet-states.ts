import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * The states of the fleet summary (SPEC section 11), which the OKM list filters on too: in
 * step (the last poll was answered {}), drifting (it was answered with a correction), never
 * polled (neither), and overdue (polled before but not for MISSED_INTERVALS_UNTIL_OVERDUE
 * effective polling intervals), which counts across in step and drifting.
 */
export const FLEET_STATES = ['in_step', 'drifting', 'overdue', 'never_polled'] as const;
export type FleetState = (typeof FLEET_STATES)[number];

/** An OKM is overdue when it has polled before but not for this many effective polling intervals. */
export const MISSED_INTERVALS_UNTIL_OVERDUE = 3;

/** What overdue is measured against. */
export interface OverdueClock {
  fleetPollingInterval: number;
  now: number;
}

export function isOverdue(lastSyncTime: number | null, effectivePollingIntervalSeconds: number, now: number): boolean {
  return lastSyncTime !== null && lastSyncTime + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * effectivePollingIntervalSeconds < now;
}

const neverPolled = sql<SqlBool>`okms.last_sync_time is null`;

/** The state as a condition on the okms row; never NULL, so that its negation holds where it does not. */
export function fleetStateCondition(state: FleetState, clock: OverdueClock): RawBuilder<SqlBool> {
  switch (state) {
    case 'never_polled':
      return neverPolled;
    case 'in_step':
      return sql<SqlBool>`(okms.last_correction is null and okms.last_sync_time is not null)`;
    case 'drifting':
      return sql<SqlBool>`okms.last_correction is not null`;
    case 'overdue':
      return sql<SqlBool>`(okms.last_sync_time is not null and okms.last_sync_time + ${MISSED_INTERVALS_UNTIL_OVERDUE * 1000} * coalesce(okms.polling_interval, ${clock.fleetPollingInterval}) < ${clock.now})`;
  }
}
