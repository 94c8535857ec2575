import { Migrator, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import type { DialectStrategy } from './dialects/strategy.ts';
import type { MigrationContext, MigrationModule } from './migrations/migration-context.ts';
import * as initial from './migrations/0001_initial.ts';
import * as pki from './migrations/0002_pki.ts';
import * as apiKeys from './migrations/0003_api_keys.ts';
import * as dlock from './migrations/0004_dlock.ts';
import * as acl from './migrations/0005_acl.ts';
import * as statusEvents from './migrations/0006_status_events.ts';
import * as okmHardening from './migrations/0007_okm_hardening.ts';
import * as statusFanOut from './migrations/0008_status_fan_out.ts';
import * as dataKeys from './migrations/0009_data_keys.ts';
import * as okmClaims from './migrations/0010_okm_claims.ts';
import * as okmLastCorrection from './migrations/0011_okm_last_correction.ts';
import * as fleetEvents from './migrations/0012_fleet_events.ts';
import * as rollouts from './migrations/0013_rollouts.ts';
import * as listPaging from './migrations/0014_list_paging.ts';
import * as aclListSizes from './migrations/0015_acl_list_sizes.ts';
import * as listFilters from './migrations/0016_list_filters.ts';
import * as fleetSummaryCounts from './migrations/0017_fleet_summary_counts.ts';
import * as statementPageBuckets from './migrations/0018_statement_page_buckets.ts';
import * as dropOkmsSummaryIndex from './migrations/0019_drop_okms_summary_index.ts';
import * as pageBucketDeltas from './migrations/0020_page_bucket_deltas.ts';
import * as firmwarePageBuckets from './migrations/0021_firmware_page_buckets.ts';
import * as statePageBuckets from './migrations/0022_state_page_buckets.ts';
import * as leanPoll from './migrations/0023_lean_poll.ts';
import * as claimFailuresPerCustomer from './migrations/0024_claim_failures_per_customer.ts';
import * as aclNames from './migrations/0025_acl_names.ts';
import * as okmSubscriberUrls from './migrations/0026_okm_subscriber_urls.ts';
import * as rolloutOkmList from './migrations/0027_rollout_okm_list.ts';
import * as stuckOkms from './migrations/0028_stuck_okms.ts';
import * as peopleAndSessions from './migrations/0029_people_and_sessions.ts';
import * as auditTrail from './migrations/0030_audit_trail.ts';
import * as rolloutResume from './migrations/0031_rollout_resume.ts';
import * as lockSearchIgnoringCase from './migrations/0032_lock_search_ignoring_case.ts';

// Migrations describe tables that the current schema types may no longer have.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDb = Kysely<any>;

/**
 * Every migration, in order; the name is what the database records as applied. Exported for
 * the tests that build a database as it was before one of them and upgrade it.
 */
export const MIGRATIONS: Readonly<Record<string, MigrationModule>> = {
  '0001_initial': initial,
  '0002_pki': pki,
  '0003_api_keys': apiKeys,
  '0004_dlock': dlock,
  '0005_acl': acl,
  '0006_status_events': statusEvents,
  '0007_okm_hardening': okmHardening,
  '0008_status_fan_out': statusFanOut,
  '0009_data_keys': dataKeys,
  '0010_okm_claims': okmClaims,
  '0011_okm_last_correction': okmLastCorrection,
  '0012_fleet_events': fleetEvents,
  '0013_rollouts': rollouts,
  '0014_list_paging': listPaging,
  '0015_acl_list_sizes': aclListSizes,
  '0016_list_filters': listFilters,
  '0017_fleet_summary_counts': fleetSummaryCounts,
  '0018_statement_page_buckets': statementPageBuckets,
  '0019_drop_okms_summary_index': dropOkmsSummaryIndex,
  '0020_page_bucket_deltas': pageBucketDeltas,
  '0021_firmware_page_buckets': firmwarePageBuckets,
  '0022_state_page_buckets': statePageBuckets,
  '0023_lean_poll': leanPoll,
  '0024_claim_failures_per_customer': claimFailuresPerCustomer,
  '0025_acl_names': aclNames,
  '0026_okm_subscriber_urls': okmSubscriberUrls,
  '0027_rollout_okm_list': rolloutOkmList,
  '0028_stuck_okms': stuckOkms,
  '0029_people_and_sessions': peopleAndSessions,
  '0030_audit_trail': auditTrail,
  '0031_rollout_resume': rolloutResume,
  '0032_lock_search_ignoring_case': lockSearchIgnoringCase,
};

export async function migrateToLatest(db: AnyDb, dialect: DialectStrategy): Promise<MigrationResultSet> {
  // Migrations are told which database they run on, not given the live strategy, whose
  // behaviour may change after they have run (src/db/migrations/migration-context.ts).
  const context: MigrationContext = { kind: dialect.name };
  const migrations: Record<string, Migration> = Object.fromEntries(
    Object.entries(MIGRATIONS).map(([name, migration]) => [name, { up: (trx: AnyDb) => migration.up(trx, context) }]),
  );
  const migrationTableSchema = await dialect.migrationTableSchema(db);
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, ...(migrationTableSchema ? { migrationTableSchema } : {}) });
  const result = await migrator.migrateToLatest();
  if (result.error) throw result.error;
  return result;
}
