import { canonicalJson, canonicalTextDigest } from '../shared/canonical-json.ts';

/**
 * The tamper evidence of the audit trail (contract §18): each entry's `hash` is the SHA-256 of the
 * canonical JSON (RFC 8785) of the entry with its `prev_hash`, the hash of the entry before it;
 * signed checkpoints pin the chain's length and last hash from time to time. Pure: it knows no
 * database and no key; the caller reads the entries in order and checks the signatures.
 */

/** The `prev_hash` of the first entry of a chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** An entry as it is chained: `id` numbers the chain from 1 without gaps; every other member is hashed as it is. */
export interface ChainedEntry {
  id: number;
  prev_hash: string;
  hash: string;
  [member: string]: unknown;
}

/** The hash an entry must carry: over everything but its own hash. */
export function entryHash(entry: Omit<ChainedEntry, 'hash'> | ChainedEntry): string {
  const { hash: _hash, ...hashed } = entry as ChainedEntry;
  return canonicalTextDigest(canonicalJson(hashed));
}

/** The entry that follows `previous` (undefined: the first), with its id, prev_hash and hash. */
export function chainEntry<T extends Record<string, unknown>>(previous: Pick<ChainedEntry, 'id' | 'hash'> | undefined, content: T): T & ChainedEntry {
  const linked = { ...content, id: (previous?.id ?? 0) + 1, prev_hash: previous?.hash ?? GENESIS_HASH };
  return { ...linked, hash: entryHash(linked) } as T & ChainedEntry;
}

/** A checkpoint, once its signature is checked: the chain had `seq` entries, the last of them with `hash`. */
export interface Checkpoint {
  seq: number;
  hash: string;
}

/** The first thing wrong with a chain, in the words `keyfleet audit verify` prints. */
export type ChainProblem =
  | { kind: 'altered'; seq: number; detail: string }
  | { kind: 'inserted'; seq: number; detail: string }
  | { kind: 'deleted'; seq: number; detail: string }
  | { kind: 'reordered'; seq: number; detail: string }
  | { kind: 'missing_tail'; seq: number; detail: string };

/**
 * Walks `entries`, read in the order of their `id` (an iterable, so that a million entries
 * stream through), from `start` (the entry before the first read: undefined for the chain's
 * beginning, or a retained anchor after pruning). Returns the first problem, or undefined when
 * the chain is intact to its last entry and reaches every checkpoint given:
 *
 * - deleted: a gap in the seqs;
 * - inserted: an entry whose seq repeats the one before, or that hashes right but does not
 *   link to the entry before it (made outside the chain and slipped in);
 * - reordered: an entry that hashes right under another seq than the one it is stored with
 *   (seqs exchanged by hand);
 * - altered: an entry that does not hash to its stored hash (a value edited by hand);
 * - missing_tail: a checkpoint beyond the last entry, or whose hash the entry at its seq does
 *   not have (everything after a checkpoint can be rewritten with fresh hashes, as the hash has
 *   no secret; the signed checkpoint is what pins it).
 */
export function verifyChain(entries: Iterable<ChainedEntry>, { start, checkpoints = [] }: { start?: Pick<ChainedEntry, 'id' | 'hash'>; checkpoints?: readonly Checkpoint[] } = {}): ChainProblem | undefined {
  const checkpointAt = new Map(checkpoints.map((checkpoint) => [checkpoint.seq, checkpoint.hash]));
  /** Seqs of the hashes walked so far: where an entry that links to one of them was written. */
  const seqOfHash = new Map<string, number>();
  let previous = start;
  if (start) seqOfHash.set(start.hash, start.id);
  for (const entry of entries) {
    const expectedSeq = (previous?.id ?? 0) + 1;
    if (entry.id < expectedSeq) return { kind: 'inserted', seq: entry.id, detail: `a second entry ${entry.id}: its seq was taken already` };
    if (entry.id > expectedSeq) return { kind: 'deleted', seq: expectedSeq, detail: `entries ${expectedSeq}–${entry.id - 1} are missing` };
    if (entryHash(entry) !== entry.hash) {
      const writtenAs = seqWrittenAs(entry, seqOfHash);
      return writtenAs === undefined
        ? { kind: 'altered', seq: entry.id, detail: `entry ${entry.id} does not hash to its stored hash: it was changed after it was written` }
        : { kind: 'reordered', seq: entry.id, detail: `entry ${entry.id} was written as entry ${writtenAs}` };
    }
    if (entry.prev_hash !== (previous?.hash ?? GENESIS_HASH)) return { kind: 'inserted', seq: entry.id, detail: `entry ${entry.id} does not follow entry ${expectedSeq - 1}: it was made outside the chain` };
    const signed = checkpointAt.get(entry.id);
    if (signed !== undefined && signed !== entry.hash) return { kind: 'altered', seq: entry.id, detail: `entry ${entry.id} is not the entry its signed checkpoint names: the chain was rewritten up to here` };
    seqOfHash.set(entry.hash, entry.id);
    previous = entry;
  }
  const last = previous?.id ?? 0;
  const furthest = Math.max(0, ...checkpointAt.keys());
  if (furthest > last) return { kind: 'missing_tail', seq: last + 1, detail: `a signed checkpoint counts ${furthest} entries and the chain ends at ${last}: entries ${last + 1}–${furthest} are gone` };
  return undefined;
}

/** The seq under which an entry that does not hash as stored would hash right: where it was written, if it was moved. */
function seqWrittenAs(entry: ChainedEntry, seqOfHash: ReadonlyMap<string, number>): number | undefined {
  const afterItsPredecessor = seqOfHash.get(entry.prev_hash);
  const candidates = [afterItsPredecessor === undefined ? undefined : afterItsPredecessor + 1, entry.id + 1, entry.id - 1];
  return candidates.find((seq) => seq !== undefined && seq !== entry.id && seq > 0 && entryHash({ ...entry, id: seq }) === entry.hash);
}
