import type { AnyDb, MigrationContext } from './migration-context.ts';
import { sql } from 'kysely';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/** The hash the first entry of the chain follows (src/audit/chain.ts GENESIS_HASH). */
const GENESIS_HASH = '0'.repeat(64);

/**
 * The audit trail of changes (SPEC section 18).
 *
 * - `audit_entries`: one row per change, inserted by the change's own transaction (`id`, in the
 *   order written). The chainer then gives each committed entry its place in the chain: `seq`
 *   from 1 without gaps, `prev_hash` and `hash`; null until then. No foreign keys: an entry
 *   outlives what it names. Indexed for the searches the API offers, each ending in `seq` for
 *   its newest-first pages, and the entries not yet chained by a partial index.
 * - `audit_chain_head`: one row, the chain's last seq and hash, which the chainer locks (an
 *   UPDATE of it) while it chains: one chainer at a time on every process, no advisory lock,
 *   and no change ever waits for it.
 * - `audit_checkpoints`: the chain's length and last hash at a seq, signed by the deployment's
 *   signing key (a compact JWS); what pins the chain against a rewrite of its tail, and the
 *   anchor it is verified from after retention pruned the entries before it.
 * - `audit_event_cursor`: one row, the last entry passed on as an `audit.entry` fleet event;
 *   advanced in the transaction that queues the events, so that each entry is shipped once.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('audit_entries')
    // On SQLite the plain rowid, without AUTOINCREMENT, so that an insert does not write
    // sqlite_sequence as well: a row id only orders the entries waiting to be chained (the
    // chain's own numbering is seq), so one used again after retention emptied the table is harmless.
    .addColumn('id', idType(context), (c) => (context.kind === 'postgres' ? autoIncrementPrimaryKey(context, c) : c.primaryKey()))
    .addColumn('seq', idType(context), (c) => c.unique())
    .addColumn('time', 'bigint', (c) => c.notNull())
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('actor_name', 'text', (c) => c.notNull())
    .addColumn('customer', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('entity_type', 'text', (c) => c.notNull())
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('before_json', 'text')
    .addColumn('after_json', 'text')
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('prev_hash', 'text')
    .addColumn('hash', 'text')
    .execute();
  await db.schema.createIndex('audit_entries_unchained_idx').on('audit_entries').column('id').where(sql.ref('seq'), 'is', null).execute();
  await db.schema.createIndex('audit_entries_entity_idx').on('audit_entries').columns(['entity_type', 'entity_id', 'seq']).execute();
  await db.schema.createIndex('audit_entries_customer_idx').on('audit_entries').columns(['customer', 'seq']).execute();
  await db.schema.createIndex('audit_entries_actor_idx').on('audit_entries').columns(['actor_id', 'seq']).execute();
  await db.schema.createIndex('audit_entries_action_idx').on('audit_entries').columns(['action', 'seq']).execute();
  await db.schema.createIndex('audit_entries_time_idx').on('audit_entries').columns(['time']).execute();

  await db.schema
    .createTable('audit_chain_head')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
  await db.insertInto('audit_chain_head').values({ id: 1, seq: 0, hash: GENESIS_HASH }).execute();

  await db.schema
    .createTable('audit_event_cursor')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('audit_event_cursor').values({ id: 1, seq: 0 }).execute();

  await db.schema
    .createTable('audit_checkpoints')
    .addColumn('seq', 'bigint', (c) => c.primaryKey())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('signed_at', 'bigint', (c) => c.notNull())
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('jws', 'text', (c) => c.notNull())
    .execute();
}
