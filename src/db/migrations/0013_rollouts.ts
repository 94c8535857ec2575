import { sql } from 'kysely';
import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/**
 * Firmware rollouts (contract §13): the rollouts, their members (chosen once, with the
 * group and progress of each OKM), the rollout whose offer applies to an OKM (kept on its row
 * so that a poll of an OKM in no rollout reads nothing more), and the customer's time zone
 * for maintenance windows.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('rollouts')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('customer_id', 'integer', (c) => c.references('customers.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('filter', 'text')
    .addColumn('group_percents', 'text', (c) => c.notNull())
    .addColumn('success_threshold', 'integer', (c) => c.notNull())
    .addColumn('error_threshold', 'integer', (c) => c.notNull())
    .addColumn('update_timeout_ms', 'bigint', (c) => c.notNull())
    .addColumn('auto_advance', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('current_group', 'integer', (c) => c.notNull())
    .addColumn('start_at', 'bigint')
    .addColumn('window_from', 'integer')
    .addColumn('window_to', 'integer')
    .addColumn('approval_required', 'integer', (c) => c.notNull())
    .addColumn('approved_by', 'text')
    .addColumn('approved_at', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .execute();
  // The sweep reads only the rollouts that may have work: running ones and scheduled starts.
  await db.schema.createIndex('rollouts_state_idx').on('rollouts').columns(['state', 'start_at']).execute();
  await db.schema.createIndex('rollouts_customer_idx').on('rollouts').columns(['customer_id', 'id']).execute();

  await db.schema
    .createTable('rollout_members')
    .addColumn('rollout_id', 'integer', (c) => c.notNull().references('rollouts.id').onDelete('cascade'))
    .addColumn('serial_number', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('group_index', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('offered_at', 'bigint')
    .addColumn('status_changed_at', 'bigint')
    .addPrimaryKeyConstraint('rollout_members_pkey', ['rollout_id', 'serial_number'])
    .execute();
  // Per-group counts walk this index; the sweep finds offers past their timeout in the second.
  await db.schema.createIndex('rollout_members_group_idx').on('rollout_members').columns(['rollout_id', 'group_index', 'status']).execute();
  await db.schema.createIndex('rollout_members_offered_idx').on('rollout_members').columns(['rollout_id', 'status', 'offered_at']).execute();
  await db.schema.createIndex('rollout_members_serial_idx').on('rollout_members').column('serial_number').execute();

  await db.schema.alterTable('okms').addColumn('rollout_id', 'integer').execute();
  await db.schema.createIndex('okms_rollout_idx').on('okms').column('rollout_id').where(sql.ref('rollout_id'), 'is not', null).execute();

  await db.schema.alterTable('customers').addColumn('time_zone', 'text').execute();
}
