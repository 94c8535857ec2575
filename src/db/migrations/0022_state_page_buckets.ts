import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { pageBucketTriggers, recountPageBuckets } from './frozen/page-buckets.ts';
import { OKM_STATE_LIST, PAGED_LISTS } from './frozen/paged-lists.ts';

/**
 * Page buckets for the OKM list filtered by state, in step, drifting or never polled
 * (OKM_STATE_LIST), so that a page deep in the OKMs in step (most of a fleet) no longer walks
 * half of them. Every list's triggers are created anew, as their move triggers now compare the
 * row's scopes rather than its columns (the same moves for the lists before; for this one, none
 * on a poll that changes no verdict), and the OKMs stored so far are counted.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  for (const list of PAGED_LISTS) {
    for (const statement of pageBucketTriggers(context, list)) await sql.raw(statement).execute(db);
  }
  // Migrations 0018 to 0021 create the triggers of every list of frozen/paged-lists.ts, this one's
  // too: deltas they appended (none, unless a migration between wrote OKMs) would count twice.
  await sql`DELETE FROM page_bucket_deltas WHERE list = ${OKM_STATE_LIST.name}`.execute(db);
  await recountPageBuckets(db, OKM_STATE_LIST);
}
