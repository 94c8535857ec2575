/**
 * What an OKM's row records about the answers to its polls: the last correction sent and
 * since which poll, the retry policy's holds of firmware offers it did not take, and whether
 * it is stuck (contract §15). The poll decides it (src/device/poll-verdict.ts) and writes it
 * only when it changes; the OKM record reads it (a stuck OKM's polls, admin-repository.ts).
 */

/** The retry policy's state for one firmware offer the OKM did not take. */
export interface OfferHold {
  /** The resolver (reply key) whose offer is held back. */
  resolver: string;
  /** The offer's identity: a new version (another digest) starts afresh. */
  digest: string;
  /** Rounds of offers made so far. */
  rounds: number;
  /** Polls answered with the offer so far, over every round. */
  offered: number;
  /** The poll number (okm_polls.polls) from which the offer is made again. */
  resumeAtPoll: number;
}

export interface Stuck {
  resolver: string;
  /** When the OKM became stuck, epoch ms. */
  since: number;
}

/** What an OKM's row records about the answers to its polls, written only when it changes. */
export interface CorrectionRecord {
  /** The last poll's correction: its reply key and identity (null: answered {}). */
  correction: string | null;
  digest: string | null;
  /** The number of the first of the polls in a row that were sent that correction. */
  sincePoll: number | null;
  /** One per firmware offer the retry policy holds back or has held back. */
  holds: readonly OfferHold[];
  stuck: Stuck | null;
}

/** The record of most rows; the poll tells a steady poll by this very object (correctionRecordOf returns it). */
export const NOTHING_RECORDED: CorrectionRecord = { correction: null, digest: null, sincePoll: null, holds: [], stuck: null };

/** The okms columns a CorrectionRecord is kept in. */
export interface CorrectionColumns {
  last_correction: string | null;
  correction_digest: string | null;
  correction_since_poll: number | null;
  offer_hold: string | null;
  stuck_resolver: string | null;
  stuck_since: number | null;
}

/** The okms columns of a CorrectionRecord: the one mapping of both statement forms of the poll. */
export const correctionColumns = (record: CorrectionRecord): CorrectionColumns => ({
  last_correction: record.correction,
  correction_digest: record.digest,
  correction_since_poll: record.sincePoll,
  offer_hold: record.holds.length === 0 ? null : JSON.stringify(record.holds),
  stuck_resolver: record.stuck?.resolver ?? null,
  stuck_since: record.stuck?.since ?? null,
});

/** The CorrectionRecord an OKM's row holds (most rows: nothing). */
export function correctionRecordOf(row: CorrectionColumns): CorrectionRecord {
  if (row.last_correction === null && row.offer_hold === null && row.stuck_resolver === null) return NOTHING_RECORDED;
  return {
    correction: row.last_correction,
    digest: row.correction_digest,
    sincePoll: row.correction_since_poll === null ? null : Number(row.correction_since_poll),
    holds: row.offer_hold === null ? [] : (JSON.parse(row.offer_hold) as OfferHold[]),
    stuck: row.stuck_resolver === null ? null : { resolver: row.stuck_resolver, since: Number(row.stuck_since) },
  };
}

/**
 * How many polls an OKM has been sent a correction without taking it: the polls of the current
 * run of it, since its last hold's resumption, plus the offers of earlier rounds.
 */
export function pollsSentWithoutEffect(record: Pick<CorrectionRecord, 'correction' | 'sincePoll' | 'holds'>, resolver: string, poll: number): number {
  const hold = record.holds.find((candidate) => candidate.resolver === resolver);
  const run = record.correction === resolver && record.sincePoll !== null && record.sincePoll >= (hold?.resumeAtPoll ?? 0) ? poll - record.sincePoll + 1 : 0;
  return (hold?.offered ?? 0) + run;
}
