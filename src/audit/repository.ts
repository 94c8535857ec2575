import type { Db } from '../db/database.ts';
import { afterKey } from '../db/cursor.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { entryOfRow, type AuditEntry } from './trail.ts';

/** What a search of the trail selects; every member an AND. */
export interface AuditFilter {
  /** `kind:id` of an actor (person:12, token:<jti>, api_key:<id>, cli:<user>, system:keyfleet). */
  actor?: { kind: string; id: string };
  customer?: string;
  entityType?: string;
  entityId?: string;
  action?: string;
  /** Epoch ms, inclusive. */
  since?: number;
  /** Epoch ms, exclusive. */
  until?: number;
}

/** The audit log, newest first: its cursor is the id of the last entry of a page. */
export const AUDIT_LOG_PAGES = cursorList<[number]>('audit-log', ['integer']);

const ENTRY_COLUMNS = [
  'seq',
  'time',
  'actor_kind',
  'actor_id',
  'actor_name',
  'customer',
  'action',
  'entity_type',
  'entity_id',
  'before_json',
  'after_json',
  'request_id',
  'ip',
  'user_agent',
  'prev_hash',
  'hash',
] as const;

/** The entries the filter selects (an entry is shown once it has its place in the chain, within a second of its commit). */
function selected(db: Db, filter: AuditFilter) {
  let query = db.selectFrom('audit_entries').select(ENTRY_COLUMNS);
  if (filter.actor !== undefined) query = query.where('actor_id', '=', filter.actor.id).where('actor_kind', '=', filter.actor.kind);
  if (filter.customer !== undefined) query = query.where('customer', '=', filter.customer);
  if (filter.entityType !== undefined) query = query.where('entity_type', '=', filter.entityType);
  if (filter.entityId !== undefined) query = query.where('entity_id', '=', filter.entityId);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  if (filter.since !== undefined) query = query.where('time', '>=', filter.since);
  if (filter.until !== undefined) query = query.where('time', '<', filter.until);
  return query;
}

/** One page of the entries the filter selects, newest first. */
export async function searchAuditLog(db: Db, filter: AuditFilter, page: CursorPageRequest<[number]>): Promise<CursorPage<AuditEntry>> {
  let query = selected(db, filter);
  if (page.after !== undefined) query = query.where(afterKey(['seq'], page.after, 'desc'));
  const rows = await query.orderBy('seq', 'desc').limit(page.limit + 1).execute();
  return AUDIT_LOG_PAGES.page(rows.map(entryOfRow), page.limit, (entry) => [entry.id]);
}

/** Rows read per statement by the streams below: bounded memory whatever the trail's length. */
const STREAM_CHUNK = 2_000;

/** Every entry the filter selects, newest first, read a chunk at a time: what an export streams. */
export async function* auditLogNewestFirst(db: Db, filter: AuditFilter): AsyncGenerator<AuditEntry> {
  let after: number | undefined;
  for (;;) {
    let query = selected(db, filter);
    if (after !== undefined) query = query.where('seq', '<', after);
    const rows = await query.orderBy('seq', 'desc').limit(STREAM_CHUNK).execute();
    for (const row of rows) yield entryOfRow(row);
    if (rows.length < STREAM_CHUNK) return;
    after = Number(rows.at(-1)!.seq);
  }
}

/** Every entry of the chain from the oldest kept, in chain order, a chunk at a time: what `keyfleet audit verify` walks. */
export async function* auditChainInOrder(db: Db): AsyncGenerator<AuditEntry[]> {
  let after = -1;
  for (;;) {
    const rows = await db.selectFrom('audit_entries').select(ENTRY_COLUMNS).where('seq', '>', after).orderBy('seq').limit(STREAM_CHUNK * 5).execute();
    if (rows.length > 0) yield rows.map(entryOfRow);
    if (rows.length < STREAM_CHUNK * 5) return;
    after = Number(rows.at(-1)!.seq);
  }
}

/** The chain's head: the id and hash of its last entry (0 and the genesis hash before the first). */
export async function auditChainHead(db: Db): Promise<{ seq: number; hash: string }> {
  const row = await db.selectFrom('audit_chain_head').select(['seq', 'hash']).where('id', '=', 1).executeTakeFirstOrThrow();
  return { seq: Number(row.seq), hash: row.hash };
}

export interface StoredCheckpoint {
  seq: number;
  hash: string;
  signedAt: number;
  kid: string;
  jws: string;
}

export async function listAuditCheckpoints(db: Db): Promise<StoredCheckpoint[]> {
  const rows = await db.selectFrom('audit_checkpoints').select(['seq', 'hash', 'signed_at', 'kid', 'jws']).orderBy('seq').execute();
  return rows.map((row) => ({ seq: Number(row.seq), hash: row.hash, signedAt: Number(row.signed_at), kid: row.kid, jws: row.jws }));
}

export async function latestAuditCheckpoint(db: Db): Promise<StoredCheckpoint | undefined> {
  const row = await db.selectFrom('audit_checkpoints').select(['seq', 'hash', 'signed_at', 'kid', 'jws']).orderBy('seq', 'desc').limit(1).executeTakeFirst();
  return row && { seq: Number(row.seq), hash: row.hash, signedAt: Number(row.signed_at), kid: row.kid, jws: row.jws };
}

/** The hash of the entry `seq`, if it is kept. */
export async function auditEntryHash(db: Db, seq: number): Promise<string | undefined> {
  const row = await db.selectFrom('audit_entries').select('hash').where('seq', '=', seq).executeTakeFirst();
  return row?.hash ?? undefined;
}

/** Stores a signed checkpoint; another process that signed the same seq first wins, as both signed the same thing. */
export async function insertAuditCheckpoint(db: Db, checkpoint: StoredCheckpoint): Promise<void> {
  await db
    .insertInto('audit_checkpoints')
    .values({ seq: checkpoint.seq, hash: checkpoint.hash, signed_at: checkpoint.signedAt, kid: checkpoint.kid, jws: checkpoint.jws })
    .onConflict((oc) => oc.column('seq').doNothing())
    .execute();
}

/** The oldest entry kept (after retention), if any. */
export async function oldestAuditEntry(db: Db): Promise<{ seq: number; time: number } | undefined> {
  const row = await db.selectFrom('audit_entries').select(['seq', 'time']).orderBy('seq').limit(1).executeTakeFirst();
  return row && { seq: Number(row.seq), time: Number(row.time) };
}

/** Deletes the entries up to and including `seq` (retention, down to a signed checkpoint). */
export async function deleteAuditEntriesThrough(db: Db, seq: number): Promise<number> {
  const result = await db.deleteFrom('audit_entries').where('seq', '<=', seq).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Up to `limit` entries after the id `after`, oldest first, each with its customer's id (null for a fleet change or a customer since deleted). */
export async function auditEntriesAfter(db: Db, after: number, limit: number): Promise<{ entry: AuditEntry; customerId: number | null }[]> {
  const rows = await db
    .selectFrom('audit_entries')
    .leftJoin('customers', 'customers.name', 'audit_entries.customer')
    .select(ENTRY_COLUMNS.map((column) => `audit_entries.${column}` as const))
    .select('customers.id as customer_id')
    .where('audit_entries.seq', '>', after)
    .orderBy('audit_entries.seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ entry: entryOfRow(row), customerId: row.customer_id === null ? null : Number(row.customer_id) }));
}

/** How many committed entries wait for the chainer, and since when. */
export async function unchainedAuditEntries(db: Db): Promise<{ count: number; oldest: number | null }> {
  const row = await db
    .selectFrom('audit_pending')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min('time').as('oldest')])
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), oldest: row.oldest === null ? null : Number(row.oldest) };
}
