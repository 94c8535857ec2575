import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { pageBucketTriggers, recountPageBuckets } from './frozen/page-buckets.ts';
import { AUDIT_RECORD_LIST, PAGED_LISTS } from './frozen/paged-lists.ts';

/**
 * Page buckets for an OKM's audit records (one scope per OKM), and, on PostgreSQL, the
 * page-bucket triggers of every list counted once per statement from its transition table
 * instead of once per row (src/db/dialects/postgres-page-buckets.ts): a device's backlog of
 * 60 000 audit records and a bulk load of OKMs no longer make a PL/pgSQL call per row. Each
 * list's triggers are created anew (the statements drop the ones it had first), and then the
 * audit records, stored so far without them, are counted.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  for (const list of PAGED_LISTS) {
    for (const statement of pageBucketTriggers(context, list)) await sql.raw(statement).execute(db);
  }
  await recountPageBuckets(db, AUDIT_RECORD_LIST);
}
