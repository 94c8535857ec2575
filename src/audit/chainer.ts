import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { multiRowStatement } from '../db/chunked-statements.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { RowSet } from '../db/dialects/strategy.ts';
import type { AuditContentColumns } from '../db/schema.ts';
import { canonicalTextDigest } from '../shared/canonical-json.ts';
import { ENTRY_COLUMNS, canonicalEntryText } from './trail.ts';

/** An entry waiting, as the chainer reads it. */
type PendingRow = AuditContentColumns & { id: number };

/** A waiting entry given its place in the chain. */
interface Placed {
  row: PendingRow;
  seq: number;
  prevHash: string;
  hash: string;
}

/**
 * Writes the placed entries into the chain and removes them from the waiting ones. Where a
 * statement round trip costs more than building a set (PostgreSQL), one INSERT … SELECT from
 * audit_pending joined with the row set of their places (the entries' content does not travel
 * back), and one DELETE; else (SQLite, in-process) multi-row INSERTs of their values, and one
 * DELETE of their range. Only the entries read are deleted: an entry committed meanwhile,
 * whatever its id, waits for the next call.
 */
async function moveIntoChain(trx: Db, placed: readonly Placed[], rowSet: RowSet | undefined): Promise<void> {
  const ids = placed.map((entry) => entry.row.id);
  if (rowSet === undefined) {
    await insertChained(trx, placed, ({ row, seq, prevHash, hash }) => [...ENTRY_COLUMNS.map((column) => row[column]), seq, prevHash, hash]);
    // SQLite: the chaining transaction holds the database's one write lock (it began IMMEDIATE),
    // so no entry was committed since the read, and the range is exactly the entries read.
    await deletePendingRange(trx, ids[0]!, ids.at(-1)!);
    return;
  }
  const places = rowSet<{ row_id: number; seq: number; prev_hash: string; hash: string }, 'places'>('places', [
    { name: 'row_id', type: 'bigint', values: ids },
    { name: 'seq', type: 'bigint', values: placed.map((entry) => entry.seq) },
    { name: 'prev_hash', type: 'text', values: placed.map((entry) => entry.prevHash) },
    { name: 'hash', type: 'text', values: placed.map((entry) => entry.hash) },
  ]);
  await trx
    .insertInto('audit_entries')
    .columns(['seq', ...ENTRY_COLUMNS, 'prev_hash', 'hash'])
    .expression((eb) =>
      eb
        .selectFrom('audit_pending')
        .innerJoin(places, 'places.row_id', 'audit_pending.id')
        .select(['places.seq', ...ENTRY_COLUMNS.map((column) => `audit_pending.${column}` as const), 'places.prev_hash', 'places.hash'])
        // The range lets the planner read the batch by the primary key rather than join the row set with every row waiting.
        .where('audit_pending.id', '>=', ids[0]!)
        .where('audit_pending.id', '<=', ids.at(-1)!),
    )
    .execute();
  await trx
    .deleteFrom('audit_pending')
    .where('id', '>=', ids[0]!)
    .where('id', '<=', ids.at(-1)!)
    .where('id', 'in', sql<number>`(select unnest(${ids}::bigint[]))`)
    .execute();
}

const CHAINED_COLUMNS = [...ENTRY_COLUMNS, 'seq', 'prev_hash', 'hash'] as const;

/** Entries written into the chain with their places, many a statement (SQLite: each row's values bound, no round trip to save). */
const insertChained = multiRowStatement<Placed>(CHAINED_COLUMNS.length, (db, rows) =>
  db.insertInto('audit_entries').values(rows.map((values) => Object.fromEntries(CHAINED_COLUMNS.map((column, index) => [column, values[index]])) as never)),
);

const deletePendingRange = precompiledQuery<unknown, [number, number]>(2, (db, [first, last]) =>
  db
    .deleteFrom('audit_pending')
    .where('id', '>=', first as number)
    .where('id', '<=', last as number),
);

/** Entries one chaining transaction takes at most; the next takes the rest. */
export const CHAIN_BATCH = 1_000;

/**
 * Gives the committed entries waiting (audit_pending) their place in the one chain of the
 * deployment (contract §18), in the order they were written: the next seq, the hash of the
 * entry before as prev_hash, and their own hash, and moves them into audit_entries. One
 * chainer at a time, on every process: it locks the chain's head row (an UPDATE of it) until
 * it commits; changes never take that lock, so the chain never makes a change wait. An entry
 * whose transaction has not committed yet is not seen, and is chained by a later call. Returns
 * how many entries it chained (0 with one cheap read when none waits).
 */
export async function chainPendingEntries(db: Db, rowSet?: RowSet): Promise<number> {
  const waiting = await db.selectFrom('audit_pending').select('id').limit(1).executeTakeFirst();
  if (waiting === undefined) return 0;
  return db.transaction().execute(async (trx) => {
    const head = await trx
      .updateTable('audit_chain_head')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('id', '=', 1)
      .returning(['seq', 'hash'])
      .executeTakeFirstOrThrow();
    const rows: PendingRow[] = await trx
      .selectFrom('audit_pending')
      .select(['id', ...ENTRY_COLUMNS])
      .orderBy('id')
      .limit(CHAIN_BATCH)
      .execute();
    if (rows.length === 0) return 0;
    let previous = { seq: Number(head.seq), hash: head.hash };
    const placed: Placed[] = [];
    for (const row of rows) {
      const seq = previous.seq + 1;
      const hash = canonicalTextDigest(canonicalEntryText(row, seq, previous.hash));
      placed.push({ row, seq, prevHash: previous.hash, hash });
      previous = { seq, hash };
    }
    await moveIntoChain(trx, placed, rowSet);
    await trx.updateTable('audit_chain_head').set({ seq: previous.seq, hash: previous.hash }).where('id', '=', 1).execute();
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
