import type { AnyDb } from './migration-context.ts';

/**
 * A rollout's OKM list (`GET /api/v1/rollouts/{id}/okms?state=`, contract §13) and its
 * `silent` count: an OKM is silent when it has not polled since its group started, so each
 * group's start is kept, in `rollouts.group_started_at` (a JSON array of epoch ms, one per
 * started group, like group_percents). Before this only the rollout's start was recorded:
 * every group a stored rollout had started is taken to have started then, which can count an
 * OKM as silent less often than it was, never more often.
 *
 * The list pages by serial number within one state, so rollout_members_group_idx
 * (rollout_id, group_index, status), which the group counts walked, becomes
 * (rollout_id, status, serial_number, group_index): a state's page is a range of it entered at
 * the cursor, and the counts still read the index alone. One index for one: a member's
 * change of status (a poll's progress) writes no more index entries than before.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('rollouts').addColumn('group_started_at', 'text').execute();
  const started: { id: number; current_group: number; started_at: number | string }[] = await db
    .selectFrom('rollouts')
    .select(['id', 'current_group', 'started_at'])
    .where('current_group', '>=', 0)
    .where('started_at', 'is not', null)
    .execute();
  for (const rollout of started) {
    const starts = Array.from({ length: rollout.current_group + 1 }, () => Number(rollout.started_at));
    await db.updateTable('rollouts').set({ group_started_at: JSON.stringify(starts) }).where('id', '=', rollout.id).execute();
  }

  await db.schema.dropIndex('rollout_members_group_idx').execute();
  await db.schema.createIndex('rollout_members_state_idx').on('rollout_members').columns(['rollout_id', 'status', 'serial_number', 'group_index']).execute();
}
