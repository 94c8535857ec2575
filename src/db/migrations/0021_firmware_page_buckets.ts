import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { pageBucketTriggers, recountPageBuckets } from './frozen/page-buckets.ts';
import { OKM_FIRMWARE_LIST, PAGED_LISTS } from './frozen/paged-lists.ts';

/**
 * Page buckets for the OKM list filtered by firmware version (OKM_FIRMWARE_LIST), so that a page
 * deep in the OKMs of one version no longer walks every match before it. Every list's triggers
 * are created anew, as they now leave out a row whose scope is NULL (an OKM that never
 * reported a version), and the OKMs stored so far are counted.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  for (const list of PAGED_LISTS) {
    for (const statement of pageBucketTriggers(context, list)) await sql.raw(statement).execute(db);
  }
  await recountPageBuckets(db, OKM_FIRMWARE_LIST);
}
