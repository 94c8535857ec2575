import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { RowSet } from '../db/dialects/strategy.ts';
import { canonicalTextDigest } from '../shared/canonical-json.ts';
import { canonicalEntryText } from './trail.ts';

/** The UPDATE that places one entry, compiled once: the chainer runs it for every entry. */
const placeEntry = precompiledQuery(4, (db, [seq, prevHash, hash, id]) =>
  db
    .updateTable('audit_entries')
    .set({ seq: seq as number, prev_hash: prevHash as string, hash: hash as string })
    .where('id', '=', id as number),
);

/**
 * Writes the entries' places: where a statement round trip costs more than building a set
 * (PostgreSQL), one UPDATE … FROM the row set of the batch; else (SQLite) one compiled UPDATE
 * an entry.
 */
async function placeEntries(trx: Db, placed: readonly { rowId: number; seq: number; prevHash: string; hash: string }[], rowSet: RowSet | undefined): Promise<void> {
  if (placed.length === 0) return;
  if (rowSet === undefined) {
    for (const entry of placed) await placeEntry(trx, entry.seq, entry.prevHash, entry.hash, entry.rowId);
    return;
  }
  const places = rowSet<{ row_id: number; seq: number; prev_hash: string; hash: string }, 'places'>('places', [
    { name: 'row_id', type: 'bigint', values: placed.map((entry) => entry.rowId) },
    { name: 'seq', type: 'bigint', values: placed.map((entry) => entry.seq) },
    { name: 'prev_hash', type: 'text', values: placed.map((entry) => entry.prevHash) },
    { name: 'hash', type: 'text', values: placed.map((entry) => entry.hash) },
  ]);
  // The batch's range of row ids lets the planner read only those rows (by the primary key)
  // rather than join the row set with the whole trail, which it does when left to the join.
  await trx
    .updateTable('audit_entries')
    .from(places)
    .set((eb) => ({ seq: eb.ref('places.seq'), prev_hash: eb.ref('places.prev_hash'), hash: eb.ref('places.hash') }))
    .whereRef('audit_entries.id', '=', 'places.row_id')
    .where('audit_entries.id', '>=', placed[0]!.rowId)
    .where('audit_entries.id', '<=', placed.at(-1)!.rowId)
    .execute();
}

/** Entries one chaining transaction takes at most; the next takes the rest. */
const CHAIN_BATCH = 1_000;

const CONTENT_COLUMNS = ['id', 'time', 'actor_kind', 'actor_id', 'actor_name', 'customer', 'action', 'entity_type', 'entity_id', 'before_json', 'after_json', 'request_id', 'ip', 'user_agent'] as const;

/**
 * Gives the committed entries not yet chained their place in the one chain of the deployment
 * (SPEC section 18), in the order they were written: the next seq, the hash of the entry before
 * as prev_hash, and their own hash. One chainer at a time, on every process: it locks the
 * chain's head row (an UPDATE of it) until it commits; changes never take that lock, so the
 * chain never makes a change wait. An entry whose transaction has not committed yet is not
 * seen, and is chained by a later call. Returns how many entries it chained (0 with one cheap
 * read when none waits).
 */
export async function chainPendingEntries(db: Db, rowSet?: RowSet): Promise<number> {
  const waiting = await db.selectFrom('audit_entries').select('id').where('seq', 'is', null).limit(1).executeTakeFirst();
  if (waiting === undefined) return 0;
  return db.transaction().execute(async (trx) => {
    const head = await trx
      .updateTable('audit_chain_head')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('id', '=', 1)
      .returning(['seq', 'hash'])
      .executeTakeFirstOrThrow();
    const rows = await trx.selectFrom('audit_entries').select(CONTENT_COLUMNS).where('seq', 'is', null).orderBy('id').limit(CHAIN_BATCH).execute();
    let previous = { id: Number(head.seq), hash: head.hash };
    const placed: { rowId: number; seq: number; prevHash: string; hash: string }[] = [];
    for (const row of rows) {
      const seq = previous.id + 1;
      const hash = canonicalTextDigest(canonicalEntryText(row, seq, previous.hash));
      placed.push({ rowId: row.id, seq, prevHash: previous.hash, hash });
      previous = { id: seq, hash };
    }
    await placeEntries(trx, placed, rowSet);
    await trx.updateTable('audit_chain_head').set({ seq: previous.id, hash: previous.hash }).where('id', '=', 1).execute();
    return rows.length;
  });
}

/** Chains every entry waiting, in as many batches as it takes. */
export async function chainAllPendingEntries(db: Db, rowSet?: RowSet): Promise<number> {
  let chained = 0;
  for (;;) {
    const batch = await chainPendingEntries(db, rowSet);
    chained += batch;
    if (batch < CHAIN_BATCH) return chained;
  }
}
