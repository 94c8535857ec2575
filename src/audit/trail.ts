import type { FastifyRequest } from 'fastify';
import { sql, type InsertQueryBuilder, type QueryCreator } from 'kysely';
import type { Actor } from '../auth/actor.ts';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { AuditContentColumns, AuditEntriesTable, Database } from '../db/schema.ts';
import type { AuditAction, AuditEntityType } from './actions.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { redactChange } from './redaction.ts';

/** Where a change came from: who made it and through which request (none for the command line). */
export interface ChangeSource {
  actor: Actor;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
}

/** One change, as the service that makes it describes it. */
export interface Change {
  action: AuditAction;
  /** The customer the change belongs to (its name), null for a change of the whole fleet. */
  customer: string | null;
  entity: { type: AuditEntityType; id: string };
  /** The entity before (absent: it did not exist) and after (absent: it is gone); redacted here. */
  before?: unknown;
  after?: unknown;
}

/** An entry as the API shows and exports it; `hash` is the SHA-256 of the canonical JSON of the rest. */
// A type, not an interface: it is then a ChainedEntry (which has an index signature) as it is.
export type AuditEntry = {
  id: number;
  time: string;
  actor: Actor;
  customer: string | null;
  action: string;
  entity: { type: string; id: string };
  before: unknown;
  after: unknown;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  prev_hash: string;
  hash: string;
};

/** A User-Agent is kept to this many characters: enough to name a browser or a client and its version. */
const USER_AGENT_MAX = 256;

/** The source of a change made through an HTTP request that a credential was verified for. */
export function changeSourceOf(request: FastifyRequest): ChangeSource {
  const actor = request.actor as Actor | undefined;
  if (actor === undefined) throw new Error('a change needs the actor of its request: the route has no credential check');
  const userAgent = request.headers['user-agent'];
  return { actor, requestId: request.id, ip: request.ip, userAgent: userAgent === undefined ? null : userAgent.slice(0, USER_AGENT_MAX) };
}

/** keyfleet itself: a rollout paused by its thresholds, a change no person or credential asked for. */
export const SYSTEM_SOURCE: ChangeSource = { actor: { kind: 'system', id: 'keyfleet', name: 'keyfleet' }, requestId: null, ip: null, userAgent: null };


/** The columns a change writes of its entry: everything but the entry's place in the chain. */
export const ENTRY_COLUMNS = ['time', 'actor_kind', 'actor_id', 'actor_name', 'customer', 'action', 'entity_type', 'entity_id', 'before_json', 'after_json', 'request_id', 'ip', 'user_agent'] as const;
type EntryValues = Record<(typeof ENTRY_COLUMNS)[number], unknown>;

/** The INSERT of one entry, compiled once: it runs with every change, and building it each time cost more than running it. */
const insertEntry = precompiledQuery(ENTRY_COLUMNS.length, (db, placeholders) =>
  db.insertInto('audit_pending').values(Object.fromEntries(ENTRY_COLUMNS.map((column, index) => [column, placeholders[index]])) as never),
);

function entryValues(source: ChangeSource, change: Change, now: number): EntryValues {
  const { before, after } = redactChange(change.before, change.after);
  return {
    time: now,
    actor_kind: source.actor.kind,
    actor_id: source.actor.id,
    actor_name: source.actor.name,
    customer: change.customer,
    action: change.action,
    entity_type: change.entity.type,
    entity_id: change.entity.id,
    // Canonical as written, so that the chainer hashes the stored text as it is (canonicalEntryText).
    before_json: before === undefined ? null : canonicalJson(before),
    after_json: after === undefined ? null : canonicalJson(after),
    request_id: source.requestId,
    ip: source.ip,
    user_agent: source.userAgent,
  };
}

/**
 * Writes one entry per change inside the caller's transaction `trx`, so that the entries commit
 * with the change or not at all: one INSERT into audit_pending, no lock. The chainer
 * (src/audit/chainer.ts) moves each committed entry into the chain (its id, prev_hash and hash)
 * right after, off the change's path: a change never waits for another's commit.
 */
export async function recordChanges(trx: Db, source: ChangeSource, changes: readonly Change[], now = Date.now()): Promise<void> {
  if (changes.length === 1) {
    const values = entryValues(source, changes[0]!, now);
    await insertEntry(trx, ...ENTRY_COLUMNS.map((column) => values[column]));
    return;
  }
  if (changes.length === 0) return;
  await trx
    .insertInto('audit_pending')
    .values(changes.map((change) => entryValues(source, change, now) as never))
    .execute();
}

/** A write that is the whole of a change, built with placeholders for its values: an INSERT, UPDATE or DELETE … RETURNING a row where it changed one. */
export type ChangeWrite<Table extends keyof Database> = (db: QueryCreator<Database>, placeholders: readonly unknown[]) => InsertQueryBuilder<Database, Table, object>;

/**
 * A change that is one write, with its entry, compiled once: where the database lets a WITH
 * clause write (PostgreSQL), one statement (`WITH changed AS (<write> RETURNING …) INSERT INTO
 * audit_pending SELECT … FROM changed`) that writes the entry only when the write returned a
 * row, one round trip where a transaction of the two takes four; elsewhere that transaction.
 * The returned function tells whether the write changed a row: an entry was written if so.
 */
export function changeWithEntry<Args extends readonly unknown[], Table extends keyof Database>(arity: Args['length'], write: ChangeWrite<Table>) {
  const writeAndEntry = precompiledQuery<{ id: number }, unknown[]>(arity + ENTRY_COLUMNS.length, (db, placeholders) =>
    db
      .with('changed', (creator) => write(creator, placeholders.slice(0, arity)))
      .insertInto('audit_pending')
      .columns(ENTRY_COLUMNS)
      .expression((eb) =>
        eb.selectFrom('changed').select(
          // A parameter in a select list is text to PostgreSQL unless cast; the entry's only other type is its time.
          ENTRY_COLUMNS.map((column, index) => (column === 'time' ? sql`cast(${placeholders[arity + index]} as bigint)` : sql`${placeholders[arity + index]}`).as(column)),
        ),
      )
      .returning('id'),
  );
  const writeAlone = precompiledQuery<unknown, unknown[]>(arity, (db, placeholders) => write(db, placeholders));
  return async (db: Db, writesInWith: boolean, args: Args, source: ChangeSource, change: Change, now = Date.now()): Promise<boolean> => {
    const values = entryValues(source, change, now);
    const entry = ENTRY_COLUMNS.map((column) => values[column]);
    if (writesInWith) return (await writeAndEntry(db, ...args, ...entry)).rows.length > 0;
    return db.transaction().execute(async (trx) => {
      if ((await writeAlone(trx, ...args)).rows.length === 0) return false;
      await insertEntry(trx, ...entry);
      return true;
    });
  };
}

/** As recordChanges, for one change. */
export const recordChange = (trx: Db, source: ChangeSource, change: Change, now = Date.now()) => recordChanges(trx, source, [change], now);

/** What an entry's hash covers besides its place in the chain (id, prev_hash): everything else the row holds. */
export function entryContentOfRow(row: AuditContentColumns): Omit<AuditEntry, 'id' | 'prev_hash' | 'hash'> {
  return {
    time: new Date(Number(row.time)).toISOString(),
    actor: { kind: row.actor_kind as Actor['kind'], id: row.actor_id, name: row.actor_name },
    customer: row.customer,
    action: row.action,
    entity: { type: row.entity_type, id: row.entity_id },
    before: row.before_json === null ? null : JSON.parse(row.before_json),
    after: row.after_json === null ? null : JSON.parse(row.after_json),
    request_id: row.request_id,
    ip: row.ip,
    user_agent: row.user_agent,
  };
}

/** A JSON string, or null: RFC 8785 writes strings as JSON.stringify does. */
const jsonText = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

/**
 * The canonical JSON (RFC 8785) of the entry a row becomes at `id` after `prevHash`, which is
 * what its hash covers: the same text as canonicalJson of entryOfRow's entry without its
 * hash (a property test holds the two equal), written member by member in canonical order
 * with the row's before and after as they are stored (canonical already), so that chaining
 * neither parses them nor sorts anything.
 */
export function canonicalEntryText(row: AuditContentColumns, id: number, prevHash: string): string {
  return (
    `{"action":${JSON.stringify(row.action)}` +
    `,"actor":{"id":${JSON.stringify(row.actor_id)},"kind":${JSON.stringify(row.actor_kind)},"name":${JSON.stringify(row.actor_name)}}` +
    `,"after":${row.after_json ?? 'null'},"before":${row.before_json ?? 'null'},"customer":${jsonText(row.customer)}` +
    `,"entity":{"id":${JSON.stringify(row.entity_id)},"type":${JSON.stringify(row.entity_type)}}` +
    `,"id":${id},"ip":${jsonText(row.ip)},"prev_hash":${JSON.stringify(prevHash)},"request_id":${jsonText(row.request_id)}` +
    `,"time":${JSON.stringify(new Date(Number(row.time)).toISOString())},"user_agent":${jsonText(row.user_agent)}}`
  );
}

/** A chained row as the entry it was hashed as. */
export function entryOfRow(row: AuditEntriesTable): AuditEntry {
  return { id: Number(row.seq), ...entryContentOfRow(row), prev_hash: row.prev_hash, hash: row.hash };
}
