import { CompactSign, compactVerify, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Db } from '../db/database.ts';
import { auditChainHead, auditEntryHash, insertAuditCheckpoint, latestAuditCheckpoint, type StoredCheckpoint } from './repository.ts';

/**
 * Signed checkpoints of the audit chain (contract §18): the chain's length and last hash,
 * signed with the deployment's signing key (Ed25519, public in /.well-known/jwks.json), at
 * least every CHECKPOINT_EVERY_ENTRIES entries (a checkpoint at each multiple) and every
 * CHECKPOINT_MAX_AGE_MS while entries arrive. The hash chain alone has no secret: whoever can
 * write the database can rewrite its tail with fresh hashes; a checkpoint is what they cannot
 * forge. Signed off the write path, by each server process's background step: an entry is
 * immutable once committed, so a checkpoint signed a few seconds later pins the same thing.
 */
export const CHECKPOINT_EVERY_ENTRIES = 1_000;
export const CHECKPOINT_MAX_AGE_MS = 10 * 60_000;
/** Checkpoints one step signs at most; the next step goes on (a backlog after a burst, or a first start over an old trail). */
const CHECKPOINTS_PER_STEP = 200;

/** The JWS header's `typ`: a checkpoint signature is never mistaken for a token of the same key. */
export const CHECKPOINT_TYPE = 'keyfleet-audit-checkpoint';

/** The deployment's active signing key, as the app or the command line provides it. */
export interface CheckpointSigningKey {
  kid: string;
  privateKey: CryptoKey;
}

/** What a checkpoint's signature covers. */
interface CheckpointClaims {
  seq: number;
  hash: string;
  signed_at: string;
}

async function signCheckpoint(key: CheckpointSigningKey, seq: number, hash: string, now: number): Promise<StoredCheckpoint> {
  const claims: CheckpointClaims = { seq, hash, signed_at: new Date(now).toISOString() };
  const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims))).setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: CHECKPOINT_TYPE }).sign(key.privateKey);
  return { seq, hash, signedAt: now, kid: key.kid, jws };
}

/** The seqs due a checkpoint after `last`, up to the head: each multiple of the interval, and the head itself when the last one is old. */
export function dueCheckpointSeqs(last: { seq: number; signedAt: number } | undefined, headSeq: number, now: number): number[] {
  const lastSeq = last?.seq ?? 0;
  const due: number[] = [];
  for (let seq = (Math.floor(lastSeq / CHECKPOINT_EVERY_ENTRIES) + 1) * CHECKPOINT_EVERY_ENTRIES; seq <= headSeq && due.length < CHECKPOINTS_PER_STEP; seq += CHECKPOINT_EVERY_ENTRIES) due.push(seq);
  const newest = due.at(-1) ?? lastSeq;
  const stale = last === undefined || now - last.signedAt >= CHECKPOINT_MAX_AGE_MS;
  if (headSeq > newest && stale && due.length < CHECKPOINTS_PER_STEP) due.push(headSeq);
  return due;
}

/**
 * Signs the checkpoints due now; returns how many. Several processes may sign the same seq:
 * the first insert wins, the others sign the same claims and are dropped.
 */
export async function signDueCheckpoints(db: Db, signingKey: () => Promise<CheckpointSigningKey>, now = Date.now()): Promise<number> {
  const head = await auditChainHead(db);
  const due = dueCheckpointSeqs(await latestAuditCheckpoint(db), head.seq, now);
  if (due.length === 0) return 0;
  const key = await signingKey();
  let signed = 0;
  for (const seq of due) {
    const hash = seq === head.seq ? head.hash : await auditEntryHash(db, seq);
    // Pruned already (retention ran before the first checkpoint of an old trail): nothing to pin there.
    if (hash === undefined) continue;
    await insertAuditCheckpoint(db, await signCheckpoint(key, seq, hash, now));
    signed += 1;
  }
  return signed;
}

/** A checkpoint whose signature was checked, or why it is not one. */
export type CheckedCheckpoint = { ok: true; seq: number; hash: string } | { ok: false; seq: number; reason: string };

/**
 * Checks a stored checkpoint against the public keys of the deployment (by kid): the
 * signature, the header's type, and that the signed claims are the row's seq and hash (a row
 * edited by hand next to an old signature is not a checkpoint).
 */
export async function checkCheckpoint(checkpoint: StoredCheckpoint, publicJwkOf: (kid: string) => JWK | undefined): Promise<CheckedCheckpoint> {
  const jwk = publicJwkOf(checkpoint.kid);
  if (jwk === undefined) return { ok: false, seq: checkpoint.seq, reason: `checkpoint ${checkpoint.seq} is signed by key ${checkpoint.kid}, which this deployment does not have` };
  try {
    const { payload, protectedHeader } = await compactVerify(checkpoint.jws, await importJWK(jwk, 'EdDSA'), { algorithms: ['EdDSA'] });
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Partial<CheckpointClaims>;
    if (protectedHeader.typ !== CHECKPOINT_TYPE || protectedHeader.kid !== checkpoint.kid) return { ok: false, seq: checkpoint.seq, reason: `checkpoint ${checkpoint.seq} is not an audit checkpoint signature` };
    if (claims.seq !== checkpoint.seq || claims.hash !== checkpoint.hash) return { ok: false, seq: checkpoint.seq, reason: `checkpoint ${checkpoint.seq} was edited: its signature covers entry ${claims.seq} with another hash` };
    return { ok: true, seq: checkpoint.seq, hash: checkpoint.hash };
  } catch {
    return { ok: false, seq: checkpoint.seq, reason: `checkpoint ${checkpoint.seq} has a signature that does not verify` };
  }
}
