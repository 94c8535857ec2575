import type { FastifyRequest } from 'fastify';
import type { Actor } from '../auth/actor.ts';
import type { Db } from '../db/database.ts';
import type { AuditAction, AuditEntityType } from './actions.ts';
import { chainEntry } from './chain.ts';
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

/**
 * Appends one entry per change to the chain, inside the caller's transaction `trx`, so that the
 * entries commit with the change or not at all. Call it as the transaction's last statements:
 * it locks the chain's head row (an UPDATE of it, which every database orders) and the lock is
 * held until the commit, so writers on every process take the next ids one after the other,
 * each holding the head only for its last statements.
 */
export async function recordChanges(trx: Db, source: ChangeSource, changes: readonly Change[], now = Date.now()): Promise<AuditEntry[]> {
  if (changes.length === 0) return [];
  const head = await trx
    .updateTable('audit_chain_head')
    .set((eb) => ({ seq: eb.ref('seq') }))
    .where('id', '=', 1)
    .returning(['seq', 'hash'])
    .executeTakeFirstOrThrow();
  const time = new Date(now).toISOString();
  const entries: AuditEntry[] = [];
  let previous: { id: number; hash: string } = { id: Number(head.seq), hash: head.hash };
  for (const change of changes) {
    const { before, after } = redactChange(change.before, change.after);
    const entry = chainEntry(previous, {
      time,
      actor: { kind: source.actor.kind, id: source.actor.id, name: source.actor.name },
      customer: change.customer,
      action: change.action,
      entity: { type: change.entity.type, id: change.entity.id },
      before: before ?? null,
      after: after ?? null,
      request_id: source.requestId,
      ip: source.ip,
      user_agent: source.userAgent,
    }) as AuditEntry;
    entries.push(entry);
    previous = entry;
  }
  await trx.insertInto('audit_entries').values(entries.map((entry) => rowOf(entry, now))).execute();
  await trx.updateTable('audit_chain_head').set({ seq: previous.id, hash: previous.hash }).where('id', '=', 1).execute();
  return entries;
}

/** As recordChanges, for one change. */
export const recordChange = (trx: Db, source: ChangeSource, change: Change, now = Date.now()) => recordChanges(trx, source, [change], now);

function rowOf(entry: AuditEntry, now: number) {
  return {
    seq: entry.id,
    time: now,
    actor_kind: entry.actor.kind,
    actor_id: entry.actor.id,
    actor_name: entry.actor.name,
    customer: entry.customer,
    action: entry.action,
    entity_type: entry.entity.type,
    entity_id: entry.entity.id,
    before_json: entry.before === null ? null : JSON.stringify(entry.before),
    after_json: entry.after === null ? null : JSON.stringify(entry.after),
    request_id: entry.request_id,
    ip: entry.ip,
    user_agent: entry.user_agent,
    prev_hash: entry.prev_hash,
    hash: entry.hash,
  };
}

/** A stored row as the entry it was hashed as. */
export function entryOfRow(row: {
  seq: number;
  time: number;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
  customer: string | null;
  action: string;
  entity_type: string;
  entity_id: string;
  before_json: string | null;
  after_json: string | null;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  prev_hash: string;
  hash: string;
}): AuditEntry {
  return {
    id: Number(row.seq),
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
    prev_hash: row.prev_hash,
    hash: row.hash,
  };
}
