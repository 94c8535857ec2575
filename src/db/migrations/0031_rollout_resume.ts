import type { AnyDb, MigrationContext } from './migration-context.ts';

/**
 * When a paused rollout was last resumed (contract §13, docs/rollouts.md): the sweep pauses a
 * resumed rollout again for its error threshold only when a member failed after this time, so
 * that the failures an operator resumed over do not pause it again within one sweep. Null:
 * never resumed, every failure counts.
 */
export async function up(db: AnyDb, _context: MigrationContext): Promise<void> {
  await db.schema.alterTable('rollouts').addColumn('resumed_at', 'bigint').execute();
}
