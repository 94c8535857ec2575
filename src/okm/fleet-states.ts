import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * The states of the fleet summary (SPEC section 11), which the OKM list filters on too: in
 * step (the last poll was answered {}), drifting (it was answered with a correction), never
 * polled (neither), and overdue (polled before but not for MISSED_INTERVALS_UNTIL_OVERDUE
 * effective polling intervals), which counts across in step and drifting.
 *
 * Every state is a column of the okms row that changes only when the state does, never on a
 * steady poll: last_correction (written when the verdict changes) and overdue_at (0 until the
 * first poll; set by the fleet pass when it finds the OKM silent, cleared by its next poll).
 * Overdue is therefore as fresh as the fleet pass (src/okm/fleet-pass.ts): an OKM is marked
 * within one pass of passing its due time (docs/okm-admin-api.md says how long that is).
 */
export const FLEET_STATES = ['in_step', 'drifting', 'overdue', 'never_polled'] as const;
export type FleetState = (typeof FLEET_STATES)[number];

/** An OKM is overdue when it has polled before but not for this many effective polling intervals. */
export const MISSED_INTERVALS_UNTIL_OVERDUE = 3;

/** overdue_at of an OKM that has never polled. */
export const NEVER_POLLED = 0;

/** See above: the fleet pass has found the OKM silent, and it has not polled since. */
export function isOverdue(okm: { overdueAt: number | null }): boolean {
  return okm.overdueAt !== null && okm.overdueAt > NEVER_POLLED;
}

/**
 * The state as a condition on the okms row. Each is read through an index of its own where the
 * state is rare (never polled, drifting, overdue: partial indexes), or walks the serial number
 * order where it is common. `overdue` is written as its partial index's condition so that
 * SQLite uses that index, and so is NULL where overdue_at is: a negation must coalesce it
 * (admin-repository.ts does).
 */
export function fleetStateCondition(state: FleetState): RawBuilder<SqlBool> {
  switch (state) {
    case 'never_polled':
      return sql<SqlBool>`okms.overdue_at = ${sql.lit(NEVER_POLLED)}`;
    case 'in_step':
      return sql<SqlBool>`(okms.last_correction is null and coalesce(okms.overdue_at, -1) <> ${sql.lit(NEVER_POLLED)})`;
    case 'drifting':
      return sql<SqlBool>`okms.last_correction is not null`;
    case 'overdue':
      return sql<SqlBool>`okms.overdue_at > ${sql.lit(NEVER_POLLED)}`;
  }
}
