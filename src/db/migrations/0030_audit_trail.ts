import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/** The hash the first entry of the chain follows (src/audit/chain.ts GENESIS_HASH). */
const GENESIS_HASH = '0'.repeat(64);

/** The columns of an entry as its change writes it (what its hash covers besides its place in the chain). */
const CONTENT_COLUMNS = [
  ['time', 'bigint', true],
  ['actor_kind', 'text', true],
  ['actor_id', 'text', true],
  ['actor_name', 'text', true],
  ['customer', 'text', false],
  ['action', 'text', true],
  ['entity_type', 'text', true],
  ['entity_id', 'text', true],
  ['before_json', 'text', false],
  ['after_json', 'text', false],
  ['request_id', 'text', false],
  ['ip', 'text', false],
  ['user_agent', 'text', false],
] as const;

/**
 * The audit trail of changes (contract §18).
 *
 * - `audit_pending`: an entry as its change's own transaction writes it (`id` in the order
 *   written), until the chainer moves it into the chain; one small index, so that the change
 *   pays for little more than the row.
 * - `audit_entries`: the chain, insert-only: each entry with its place `seq` (from 1 without
 *   gaps), `prev_hash` and `hash`, written once by the chainer and never updated (an update
 *   would rewrite every index of the row, and leave a dead row for vacuum). No foreign keys: an
 *   entry outlives what it names. Indexed for the searches the API offers, each ending in `seq`
 *   for its newest-first pages.
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
  let pending = db.schema
    .createTable('audit_pending')
    // On SQLite the plain rowid, without AUTOINCREMENT (which writes sqlite_sequence with every
    // insert): SQLite commits one transaction at a time, so a new row's id is above every row
    // waiting, even one used again after the chainer emptied the table.
    .addColumn('id', idType(context), (c) => (context.kind === 'postgres' ? autoIncrementPrimaryKey(context, c) : c.primaryKey()));
  for (const [name, type, notNull] of CONTENT_COLUMNS) pending = pending.addColumn(name, type, (c) => (notNull ? c.notNull() : c));
  await pending.execute();

  let entries = db.schema.createTable('audit_entries').addColumn('seq', idType(context), (c) => c.primaryKey());
  for (const [name, type, notNull] of CONTENT_COLUMNS) entries = entries.addColumn(name, type, (c) => (notNull ? c.notNull() : c));
  await entries
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
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
