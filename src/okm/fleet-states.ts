import { sql, type RawBuilder, type SqlBool } from 'kysely';

/**
 * The states of the fleet summary (contract §11 and §15), which the OKM list filters on
 * too. Three divide the fleet: in step (the last poll was answered {}), drifting (it was
 * answered with a correction) and never polled (neither). Two count across them: overdue
 * (polled before but not for MISSED_INTERVALS_UNTIL_OVERDUE effective polling intervals) and
 * stuck (sent one correction on stuckAfterPolls polls in a row without taking it,
 * src/device/poll-verdict.ts). A stuck OKM is most often drifting, but one whose firmware offer
 * the retry policy holds back may be answered {} meanwhile, and is then in step and stuck.
 *
 * Every state is a column of the okms row that changes only when the state does, never on a
 * steady poll: last_correction (written when the verdict changes), stuck_resolver (written
 * when the OKM becomes stuck or stops being so) and overdue_at (0 until the first poll; set by
 * the fleet pass when it finds the OKM silent, cleared by its next poll). Overdue is therefore
 * as fresh as the fleet pass (src/fleet/fleet-pass.ts): an OKM is marked within one pass of
 * passing its due time (docs/okm-admin-api.md says how long that is). Stuck is as of the
 * OKM's last poll, like drifting.
 *
 * Each state is defined here twice, side by side: as SQL on the okms row for the lists
 * (fleetStateCondition), and in memory for rows already read (stateFactsOf and isInState: the
 * fleet pass keeps each group's facts, the fleet summary counts the states from them).
 * test/okm/fleet-states.test.ts checks that the two agree.
 */
export const FLEET_STATES = ['in_step', 'drifting', 'overdue', 'never_polled', 'stuck'] as const;
export type FleetState = (typeof FLEET_STATES)[number];

/** An OKM is overdue when it has polled before but not for this many effective polling intervals. */
export const MISSED_INTERVALS_UNTIL_OVERDUE = 3;

/** overdue_at of an OKM that has never polled. */
export const NEVER_POLLED = 0;

/** See above: the fleet pass has found the OKM silent, and it has not polled since. */
export function isOverdue(overdueAt: number | null): boolean {
  return overdueAt !== null && overdueAt > NEVER_POLLED;
}

/** See above: the poll found the OKM stuck on a resolver, and no poll has found it otherwise since. */
export function isStuck(okm: { stuck_resolver: string | null }): boolean {
  return okm.stuck_resolver !== null;
}

/** The columns of the okms row an OKM's state is read from. */
export interface StateColumns {
  last_correction: string | null;
  overdue_at: number | null;
  stuck_resolver: string | null;
}

/**
 * What decides an OKM's states: its last correction, and whether it never polled, is overdue and
 * is stuck. The fleet pass's snapshot keeps these for each group of OKMs alike.
 */
export interface StateFacts {
  lastCorrection: string | null;
  neverPolled: boolean;
  overdue: boolean;
  stuck: boolean;
}

export const stateFactsOf = (okm: StateColumns): StateFacts => ({
  lastCorrection: okm.last_correction,
  neverPolled: okm.overdue_at === NEVER_POLLED,
  overdue: isOverdue(okm.overdue_at),
  stuck: isStuck(okm),
});

/** Whether an OKM is in the state: fleetStateCondition below, for an OKM already read. */
export function isInState(state: FleetState, okm: StateFacts): boolean {
  switch (state) {
    case 'never_polled':
      return okm.neverPolled;
    case 'in_step':
      return okm.lastCorrection === null && !okm.neverPolled;
    case 'drifting':
      return okm.lastCorrection !== null;
    case 'overdue':
      return okm.overdue;
    case 'stuck':
      return okm.stuck;
  }
}

/** The states that divide the fleet: every OKM is in exactly one of them. */
export const DIVIDING_STATES = ['never_polled', 'drifting', 'in_step'] as const satisfies readonly FleetState[];
export type DividingState = (typeof DIVIDING_STATES)[number];

/** Which of the dividing states an OKM is in: the one whose list it is in (isInState) and which the fleet summary counts it under. */
export function dividingStateOf(okm: StateFacts): DividingState {
  return DIVIDING_STATES.find((state) => isInState(state, okm)) ?? 'in_step';
}

/**
 * The one state shown for an OKM (its badge in the console's list and page): the first of these
 * it is in. Never polled divides nothing else; an overdue OKM has stopped polling, which matters
 * before what its last poll found; a stuck OKM is stuck whether its last poll was answered with
 * a correction or, its offer held back by the retry policy, with {} (then it is in step too, and
 * "in step" alone would read as all well).
 */
export const SUMMARY_STATES = ['never_polled', 'overdue', 'stuck', 'drifting', 'in_step'] as const satisfies readonly FleetState[];
export type SummaryState = (typeof SUMMARY_STATES)[number];

export function summaryStateOf(okm: StateFacts): SummaryState {
  return SUMMARY_STATES.find((state) => isInState(state, okm)) ?? 'in_step';
}

/**
 * The state as a condition on the okms row. Each is read through an index of its own where the
 * state is rare (never polled, drifting, overdue, stuck: partial indexes), or walks the serial
 * number order where it is common. `overdue` and `stuck` are written as their partial indexes'
 * conditions so that SQLite uses those indexes; `overdue` is NULL where overdue_at is, so a
 * negation must coalesce it (admin-repository.ts does).
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
    case 'stuck':
      return sql<SqlBool>`okms.stuck_resolver is not null`;
  }
}
