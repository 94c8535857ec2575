import type { AnyDb } from './migration-context.ts';

/**
 * okms_summary_idx (migration 0011) served the fleet summary, then only the OKM list's counts
 * of state=in_step; both read the counts kept on write now (migration 0017). Its entries hold
 * last_sync_time, so every poll moved one: on SQLite a 4 KiB page of WAL per poll (bench
 * poll-statements: 40.7 → 24.4 KiB and 68 → 58 µs of CPU per poll without it).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('okms_summary_idx').execute();
}
