import { recordChange, SYSTEM_SOURCE } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import type { EmitFleetEvent } from './events.ts';
import { emptyCounts, groupFailing, groupPassed } from './model.ts';
import { failExpiredMembers, failuresSince, findRollout, groupCounts, rolloutsToSweep, type MemberClaiming, type RolloutRow } from './repository.ts';
import { advanceRolloutFrom, pauseRunningRollout, startReadyRollout } from './service.ts';

export interface SweepLimits {
  /** Rollouts looked at per sweep. */
  rollouts: number;
  /** Members marked failed per rollout per sweep. */
  failures: number;
}

const DEFAULT_LIMITS: SweepLimits = { rollouts: 100, failures: 5_000 };

/**
 * Decides, for one running rollout, what the counts call for: a pause when more than the
 * error threshold of a started group has failed and, if it was resumed, a member of that group
 * failed after the resume (done here, in the caller's transaction),
 * else (auto_advance) the next group once the current one has passed: returned, for the
 * caller to advance outside the transaction (the group is assigned in chunks). A pause is
 * keyfleet's own change in the audit trail, its entry the transaction's last statements. Every
 * change is a compare-and-set on the rollout's state and group, so two sweepers deciding at
 * once take each step once.
 */
async function judge(tx: Db, row: RolloutRow, now: number, emit: EmitFleetEvent): Promise<'advance' | undefined> {
  const groups = (await groupCounts(tx, [row.id])).get(row.id);
  // After a resume, only failures since count: the operator resumed over the earlier ones.
  let recent: Map<number, number> | undefined;
  const failedAfterResume = async (group: number) => {
    if (row.resumed_at === null) return true;
    recent ??= await failuresSince(tx, row.id, Number(row.resumed_at));
    return (recent.get(group) ?? 0) > 0;
  };
  for (let group = 0; group <= row.current_group; group++) {
    const counts = groups?.get(group) ?? emptyCounts();
    if (groupFailing(counts, row.error_threshold) && (await failedAfterResume(group))) {
      const paused = await pauseRunningRollout(tx, row, now, emit, 'error_threshold', { group, failed: counts.failed });
      if (paused) await recordChange(tx, SYSTEM_SOURCE, paused, now);
      return undefined;
    }
  }
  const current = groups?.get(row.current_group) ?? emptyCounts();
  return row.auto_advance === 1 && groupPassed(current, row.success_threshold) ? 'advance' : undefined;
}

/**
 * One pass over the rollouts with work, bounded by `limits`: scheduled starts whose time has
 * come (and that are approved where required), offers past their timeout and members silent or
 * blocked past it marked failed (paused and finished rollouts too: their counts stay true), then the
 * thresholds of running ones. Safe with any number of processes sweeping one database.
 */
export async function sweepRollouts(db: Db, dialect: MemberClaiming, emit: EmitFleetEvent, now: number, limits: SweepLimits = DEFAULT_LIMITS): Promise<void> {
  for (const candidate of await rolloutsToSweep(db, now, limits.rollouts)) {
    if (candidate.state === 'ready') {
      await startReadyRollout(db, candidate, now, emit, 'start_at', SYSTEM_SOURCE);
      continue;
    }
    await failExpiredMembers(db, dialect, candidate, now, limits.failures);
    if (candidate.state !== 'running') continue;
    const judged = await db.transaction().execute(async (tx) => {
      // Read again inside the transaction: another process may have moved it since the list.
      const row = await findRollout(tx, candidate.id);
      return row?.state === 'running' ? { row, decision: await judge(tx, row, now, emit) } : undefined;
    });
    if (judged?.decision === 'advance') await advanceRolloutFrom(db, judged.row, judged.row.current_group, now, emit, 'success_threshold', SYSTEM_SOURCE);
  }
}
