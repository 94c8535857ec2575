import type { JWK } from 'jose';
import type { Db } from '../db/database.ts';
import { verifyChain, type ChainProblem, type Checkpoint } from './chain.ts';
import { checkCheckpoint } from './checkpoints.ts';
import { auditChainInOrder, listAuditCheckpoints, oldestAuditEntry, unchainedAuditEntries } from './repository.ts';

/** The first thing wrong with the trail: a broken chain, or a checkpoint whose signature does not hold. */
export type TrailProblem = ChainProblem | { kind: 'bad_checkpoint'; seq: number; detail: string };

export interface TrailVerification {
  intact: boolean;
  /** Entries walked, and the ids of the first and last kept. */
  entries: number;
  first: number | null;
  last: number | null;
  /** Signed checkpoints whose signatures verified, and the newest of them. */
  checkpoints: number;
  lastCheckpoint: number | null;
  /** Where the walk began after retention pruned the entries before it: the signed checkpoint it started from. */
  anchor: number | null;
  /** Committed entries the chainer has not reached yet (a server chains them within a second; the command line as it ends). */
  waiting: number;
  problem?: TrailProblem;
}

/** Every public key the deployment has had, by kid: a checkpoint signed before a rotation verifies with the key of its time. */
async function publicKeysByKid(db: Db): Promise<Map<string, JWK>> {
  const rows = await db.selectFrom('signing_keys').select(['kid', 'public_jwk']).execute();
  return new Map(rows.map((row) => [row.kid, JSON.parse(row.public_jwk) as JWK]));
}

/**
 * Walks the whole chain from its start (or from the signed checkpoint retention left as its
 * anchor) to its end, a chunk at a time, and checks every checkpoint's signature: `keyfleet
 * audit verify`. Stops at the first problem, which names the entry.
 */
export async function verifyAuditTrail(db: Db): Promise<TrailVerification> {
  const keys = await publicKeysByKid(db);
  const verified: Checkpoint[] = [];
  for (const stored of await listAuditCheckpoints(db)) {
    const checked = await checkCheckpoint(stored, (kid) => keys.get(kid));
    if (!checked.ok) return failed({ kind: 'bad_checkpoint', seq: checked.seq, detail: checked.reason }, 0, null, null, verified);
    verified.push({ seq: checked.seq, hash: checked.hash });
  }
  const oldest = await oldestAuditEntry(db);
  let start: { id: number; hash: string } | undefined;
  if (oldest !== undefined && oldest.seq > 1) {
    const anchor = verified.find((checkpoint) => checkpoint.seq === oldest.seq - 1);
    if (anchor === undefined) return failed({ kind: 'deleted', seq: 1, detail: `entries 1–${oldest.seq - 1} are missing and no signed checkpoint at ${oldest.seq - 1} says they were pruned` }, 0, oldest.seq, null, verified);
    start = { id: anchor.seq, hash: anchor.hash };
  }
  const anchorSeq = start?.id ?? null;
  let walked = 0;
  let last: number | null = start?.id ?? null;
  for await (const chunk of auditChainInOrder(db)) {
    const firstId = chunk[0]!.id;
    const lastId = chunk.at(-1)!.id;
    const inChunk = verified.filter((checkpoint) => checkpoint.seq >= firstId && checkpoint.seq <= lastId);
    const problem = verifyChain(chunk, { ...(start === undefined ? {} : { start }), checkpoints: inChunk });
    if (problem !== undefined) return failed(problem, walked, oldest?.seq ?? null, last, verified, anchorSeq);
    walked += chunk.length;
    last = lastId;
    start = { id: lastId, hash: chunk.at(-1)!.hash };
  }
  const furthest = verified.at(-1);
  if (furthest !== undefined && furthest.seq > (last ?? 0)) {
    const end = last ?? 0;
    return failed({ kind: 'missing_tail', seq: end + 1, detail: `a signed checkpoint counts ${furthest.seq} entries and the chain ends at ${end}: entries ${end + 1}–${furthest.seq} are gone` }, walked, oldest?.seq ?? null, last, verified, anchorSeq);
  }
  return { intact: true, entries: walked, first: oldest?.seq ?? null, last, checkpoints: verified.length, lastCheckpoint: furthest?.seq ?? null, anchor: anchorSeq, waiting: (await unchainedAuditEntries(db)).count };
}

function failed(problem: TrailProblem, walked: number, first: number | null, last: number | null, verified: readonly Checkpoint[], anchor: number | null = null): TrailVerification {
  return { intact: false, entries: walked, first, last, checkpoints: verified.length, lastCheckpoint: verified.at(-1)?.seq ?? null, anchor, waiting: 0, problem };
}
