import { hash } from 'node:crypto';
import type { ReportedState } from './reported.ts';
import { RESOLVERS, correctionKey, resolve, resolverNamed } from './resolvers/index.ts';
import type { Correction, DesiredState } from './resolvers/types.ts';
import { backoffPolls, type RetryPolicy } from '../shared/retry-policy.ts';
import { NOTHING_RECORDED, pollsSentWithoutEffect, type CorrectionRecord, type OfferHold, type Stuck } from '../okm/correction-record.ts';

export interface PollContext {
  desired: DesiredState;
  reported: ReportedState;
  previous: CorrectionRecord;
  /** This poll's number (okm_polls.polls once it is counted). */
  poll: number;
  now: number;
  /** The retry policy of a retried resolver's offers to this OKM. */
  policyFor: (resolver: string) => RetryPolicy;
  stuckAfterPolls: number;
}

export interface PollVerdict {
  answer: Correction;
  /** Resolvers passed over on this poll: the answer's stored lists are resolved again without them. */
  heldBack: ReadonlySet<string>;
  record: CorrectionRecord;
  /** The record differs from the previous one: the poll writes it. */
  changed: boolean;
  /** okm.stuck / okm.unstuck to emit, in that order of events. */
  events: readonly StuckEvent[];
}

export type StuckEvent = { type: 'okm.unstuck'; stuck: Stuck; polls: number } | { type: 'okm.stuck'; stuck: Stuck; polls: number };

const NO_HOLDS: ReadonlySet<string> = new Set<string>();
const IN_STEP: Correction = Object.freeze({});
const STEADY: PollVerdict = Object.freeze({ answer: IN_STEP, heldBack: NO_HOLDS, record: NOTHING_RECORDED, changed: false, events: [] });

/** A correction's identity, short: what the device is told, whatever the poll's time. */
export function correctionDigest(key: string, correction: Correction): string {
  const identity = resolverNamed(key)?.identity?.(correction) ?? JSON.stringify(correction);
  return hash('sha256', identity, 'base64url').slice(0, 22);
}

/** Holds whose offer is still made as it was, under a policy that still holds offers back. */
function standingHolds({ previous, desired, reported, policyFor }: PollContext): OfferHold[] {
  return previous.holds.filter((hold) => {
    if (policyFor(hold.resolver).offers === 0) return false;
    const correction = resolverNamed(hold.resolver)?.resolve(desired, reported);
    return correction !== undefined && correctionDigest(hold.resolver, correction) === hold.digest;
  });
}

/**
 * Decides a poll's answer and what its OKM's row records about it: the resolvers in order,
 * less the offers the retry policy holds back; the run of the correction sent; the holds; and
 * whether the OKM is stuck (sent one correction on `stuckAfterPolls` polls in a row without
 * taking it, holds neither counting nor breaking the row). Pure: the poll service writes the
 * record when `changed`, which a steady poll (answered {} as before) never is.
 */
export function decidePoll(context: PollContext): PollVerdict {
  const { desired, reported, previous, poll, now, policyFor, stuckAfterPolls } = context;
  let holds = previous.holds.length === 0 ? [] : standingHolds(context);
  const heldBack = holds.length === 0 ? NO_HOLDS : new Set(holds.filter((hold) => poll < hold.resumeAtPoll).map((hold) => hold.resolver));
  const answer = resolve(desired, reported, heldBack) ?? IN_STEP;
  // The steady poll of an OKM in step, most of the fleet's: nothing to count, nothing to write.
  if (previous === NOTHING_RECORDED && heldBack === NO_HOLDS && answer === IN_STEP) return STEADY;
  const correction = correctionKey(answer);
  const digest = correction === null ? null : correctionDigest(correction, answer);
  const continues = correction !== null && correction === previous.correction && digest === previous.digest && previous.sincePoll !== null;
  const sincePoll = correction === null ? null : continues ? previous.sincePoll! : poll;

  if (correction !== null && resolverNamed(correction)?.retried) {
    const policy = policyFor(correction);
    const hold = holds.find((candidate) => candidate.resolver === correction);
    const roundStart = Math.max(sincePoll!, hold?.resumeAtPoll ?? 0);
    const offersInRound = poll - roundStart + 1;
    if (policy.offers > 0 && offersInRound >= policy.offers) {
      const rounds = (hold?.rounds ?? 0) + 1;
      const next: OfferHold = { resolver: correction, digest: digest!, rounds, offered: (hold?.offered ?? 0) + offersInRound, resumeAtPoll: poll + 1 + backoffPolls(policy, rounds) };
      holds = [...holds.filter((candidate) => candidate !== hold), next];
    }
  }

  const record: CorrectionRecord = { correction, digest, sincePoll, holds, stuck: null };
  const qualifies = (resolver: string) => pollsSentWithoutEffect(record, resolver, poll) >= stuckAfterPolls;
  const candidates = RESOLVERS.filter(({ name }) => (name === correction || holds.some((hold) => hold.resolver === name)) && qualifies(name)).map(({ name }) => name);
  const stuckOn = candidates.find((resolver) => resolver === previous.stuck?.resolver) ?? candidates[0];
  if (stuckOn !== undefined) record.stuck = stuckOn === previous.stuck?.resolver ? previous.stuck : { resolver: stuckOn, since: now };

  const events: StuckEvent[] = [];
  if (previous.stuck && previous.stuck.resolver !== record.stuck?.resolver) {
    events.push({ type: 'okm.unstuck', stuck: previous.stuck, polls: pollsSentWithoutEffect(previous, previous.stuck.resolver, poll - 1) });
  }
  if (record.stuck && record.stuck !== previous.stuck) events.push({ type: 'okm.stuck', stuck: record.stuck, polls: pollsSentWithoutEffect(record, record.stuck.resolver, poll) });

  const changed =
    correction !== previous.correction ||
    digest !== previous.digest ||
    sincePoll !== previous.sincePoll ||
    record.stuck !== previous.stuck ||
    holds.length !== previous.holds.length ||
    holds.some((hold, index) => hold !== previous.holds[index]);
  return { answer, heldBack, record: changed ? record : previous, changed, events };
}
