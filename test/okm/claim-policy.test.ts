import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  CLAIM_BLOCK_MS,
  CLAIM_SLOWDOWN_MS,
  CLAIM_WINDOW_MS,
  claimGate,
  countFailedClaim,
  failuresInWindow,
  MAX_FAILED_CLAIMS,
  NO_FAILURES,
  SLOWED_AFTER_FAILURES,
  type ClaimGate,
  type FailureCount,
} from '../../src/okm/claim-policy.ts';

/**
 * The rules of claim-policy.ts against any sequence of claims with wrong codes, by several
 * customers, at any pace: what each customer is answered (an open gate is where the right code
 * would claim the OKM) is checked against what the customers did, not against the counts.
 */

interface Attempt {
  customer: number;
  /** Milliseconds since the attempt before. */
  gap: number;
}

interface Answered {
  customer: number;
  at: number;
  gate: ClaimGate;
  /** Whether the customer had failed within its own running window before this attempt. */
  hadFailed: boolean;
  /** Failures of the serial number in its running window before this attempt. */
  serialFailures: number;
}

/** Plays the attempts through the policy as claim-service.ts does: an open gate with a wrong code counts a failure. */
function play(attempts: readonly Attempt[]): { answered: Answered[]; failures: { customer: number; at: number }[] } {
  let serial: FailureCount = NO_FAILURES;
  const customers = new Map<number, FailureCount>();
  const answered: Answered[] = [];
  const failures: { customer: number; at: number }[] = [];
  let now = 1_000_000;
  for (const { customer, gap } of attempts) {
    now += gap;
    const counts = { serial, customer: customers.get(customer) ?? NO_FAILURES };
    const gate = claimGate(counts, now);
    answered.push({ customer, at: now, gate, hadFailed: failuresInWindow(counts.customer, now) > 0, serialFailures: failuresInWindow(counts.serial, now) });
    seen[gate.kind]++;
    if (gate.kind !== 'open') continue;
    const next = countFailedClaim(counts, now);
    serial = next.serial;
    customers.set(customer, next.customer);
    failures.push({ customer, at: now });
  }
  return { answered, failures };
}

/** Any pace, mostly bursts (so that limits are reached), also minutes, and the limits' own lengths. */
const gap = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 3 * CLAIM_SLOWDOWN_MS }), weight: 6 },
  { arbitrary: fc.integer({ min: 0, max: 20 * 60_000 }), weight: 1 },
  { arbitrary: fc.constantFrom(CLAIM_SLOWDOWN_MS, CLAIM_WINDOW_MS, CLAIM_BLOCK_MS), weight: 1 },
);
const attempts = (customers: number) => fc.array(fc.record({ customer: fc.integer({ min: 0, max: customers - 1 }), gap }), { minLength: 20, maxLength: 150 });
const RUNS = { numRuns: 400 };

/** How many answers of each kind the properties saw, so that none holds only for want of blocks or slowdowns. */
const seen = { open: 0, blocked: 0, slowed: 0 };

const failuresOf = (failures: { customer: number; at: number }[], customer: number, from: number, to: number) =>
  failures.filter((failure) => failure.customer === customer && failure.at > from && failure.at <= to).length;

describe('claim policy: who is refused, and for how long', () => {
  after(() => {
    assert.ok(seen.blocked > 1000 && seen.slowed > 1000, `the runs reached the limits: ${JSON.stringify(seen)}`);
  });

  test('the documented limits: 5 failures of one customer in 15 minutes block it for 15 minutes; from 10 of all customers, a slowdown of 2 s', () => {
    assert.deepEqual(
      { MAX_FAILED_CLAIMS, CLAIM_WINDOW_MS, CLAIM_BLOCK_MS, SLOWED_AFTER_FAILURES, CLAIM_SLOWDOWN_MS },
      { MAX_FAILED_CLAIMS: 5, CLAIM_WINDOW_MS: 15 * 60_000, CLAIM_BLOCK_MS: 15 * 60_000, SLOWED_AFTER_FAILURES: 10, CLAIM_SLOWDOWN_MS: 2_000 },
    );
  });

  test('a customer that has not failed on the serial number in the last 15 minutes is never refused, whatever the others did', () => {
    fc.assert(
      fc.property(attempts(5), (played) => {
        const { answered, failures } = play(played);
        for (const { customer, at, gate } of answered) {
          if (failuresOf(failures, customer, at - CLAIM_WINDOW_MS, at) === 0) assert.equal(gate.kind, 'open', `customer ${customer} at ${at}`);
        }
      }),
      RUNS,
    );
  });

  test(`a customer is blocked only by ${MAX_FAILED_CLAIMS} failures of its own; any other refusal ends within ${CLAIM_SLOWDOWN_MS} ms, after ${SLOWED_AFTER_FAILURES} failures of all customers`, () => {
    fc.assert(
      fc.property(attempts(5), (played) => {
        const { answered, failures } = play(played);
        for (const { customer, at, gate } of answered) {
          if (gate.kind === 'blocked') {
            assert.ok(failuresOf(failures, customer, at - CLAIM_WINDOW_MS - CLAIM_BLOCK_MS, at) >= MAX_FAILED_CLAIMS, `customer ${customer} blocked at ${at}`);
            assert.ok(gate.until - at <= CLAIM_BLOCK_MS);
          }
          if (gate.kind === 'slowed') {
            assert.ok(gate.until - at <= CLAIM_SLOWDOWN_MS, `slowed for ${gate.until - at} ms`);
            const recent = failures.filter((failure) => failure.at <= at && failure.at > at - CLAIM_WINDOW_MS - CLAIM_SLOWDOWN_MS);
            assert.ok(recent.length >= SLOWED_AFTER_FAILURES, `slowed after ${recent.length} failures`);
          }
        }
      }),
      RUNS,
    );
  });

  test(`one customer fails at most ${2 * MAX_FAILED_CLAIMS - 1} times in any 15 minutes, fewer than a slowdown takes: alone, it slows nobody`, () => {
    fc.assert(
      fc.property(attempts(4), (played) => {
        const { failures } = play(played);
        for (const { customer, at } of failures) {
          assert.ok(failuresOf(failures, customer, at - CLAIM_WINDOW_MS, at) <= 2 * MAX_FAILED_CLAIMS - 1, `customer ${customer} at ${at}`);
        }
      }),
      RUNS,
    );
    fc.assert(
      fc.property(attempts(1), (played) => {
        assert.ok(play(played).answered.every(({ gate }) => gate.kind !== 'slowed'));
      }),
      RUNS,
    );
  });

  test('while the serial number is slowed, customers that have failed on it get one counted attempt per slowdown between them', () => {
    fc.assert(
      fc.property(attempts(6), (played) => {
        const { answered } = play(played);
        let lastFailure = -Infinity;
        for (const { at, gate, hadFailed, serialFailures } of answered) {
          if (gate.kind !== 'open') continue;
          if (hadFailed && serialFailures >= SLOWED_AFTER_FAILURES) assert.ok(at - lastFailure >= CLAIM_SLOWDOWN_MS, `counted ${at - lastFailure} ms after the last`);
          lastFailure = at;
        }
      }),
      RUNS,
    );
  });

  test('a customer alone is answered exactly as by the earlier rule of one count per serial number', () => {
    /** The earlier rule, as claim-repository.ts had it: one count per serial number, blocked at the limit. */
    function earlierRule(gaps: readonly number[]): ClaimGate['kind'][] {
      let count = { failures: 0, windowStartedAt: 0, blockedUntil: null as number | null };
      let now = 1_000_000;
      return gaps.map((gapMs) => {
        now += gapMs;
        if (count.blockedUntil !== null && count.blockedUntil > now) return 'blocked';
        const windowOver = count.failures === 0 || count.windowStartedAt + CLAIM_WINDOW_MS <= now;
        const failures = windowOver ? 1 : count.failures + 1;
        count = { failures, windowStartedAt: windowOver ? now : count.windowStartedAt, blockedUntil: failures >= MAX_FAILED_CLAIMS ? now + CLAIM_BLOCK_MS : null };
        return 'open';
      });
    }
    fc.assert(
      fc.property(fc.array(gap, { minLength: 20, maxLength: 150 }), (gaps) => {
        const { answered } = play(gaps.map((gapMs) => ({ customer: 0, gap: gapMs })));
        assert.deepEqual(
          answered.map(({ gate }) => gate.kind),
          earlierRule(gaps),
        );
      }),
      RUNS,
    );
  });

  test('the answers along one serial number, customer by customer', () => {
    const [owner, beta, gamma] = [0, 1, 2];
    const rows: [Attempt, ClaimGate['kind'], string][] = [
      [{ customer: beta, gap: 0 }, 'open', 'beta fails: 1'],
      [{ customer: beta, gap: 1 }, 'open', '2'],
      [{ customer: beta, gap: 1 }, 'open', '3'],
      [{ customer: beta, gap: 1 }, 'open', '4'],
      [{ customer: beta, gap: 1 }, 'open', '5: beta is blocked'],
      [{ customer: beta, gap: 1 }, 'blocked', 'beta, for 15 minutes'],
      [{ customer: owner, gap: 1 }, 'open', 'the owner is not: it fails (6)'],
      [{ customer: gamma, gap: 1 }, 'open', 'gamma fails: 7'],
      [{ customer: gamma, gap: 1 }, 'open', '8'],
      [{ customer: gamma, gap: 1 }, 'open', '9'],
      [{ customer: gamma, gap: 1 }, 'open', '10: the serial number is slowed for 2 s'],
      [{ customer: gamma, gap: 1 }, 'slowed', 'gamma, which has failed'],
      [{ customer: owner, gap: 1 }, 'slowed', 'the owner too, as it has failed'],
      [{ customer: 3, gap: 1 }, 'open', 'a customer that has not failed is not: it fails (11), 2 s more'],
      [{ customer: owner, gap: CLAIM_SLOWDOWN_MS - 1 }, 'slowed', 'the owner, a millisecond before'],
      [{ customer: owner, gap: 1 }, 'open', '2 s after the last failure, the owner\'s right code claims'],
      [{ customer: beta, gap: 1 }, 'blocked', 'beta still'],
    ];

    const { answered } = play(rows.map(([attempt]) => attempt));

    assert.deepEqual(
      answered.map(({ gate }, index) => [gate.kind, rows[index]![2]]),
      rows.map(([, kind, why]) => [kind, why]),
    );
    const slowed = answered.filter(({ gate }) => gate.kind === 'slowed');
    for (const { at, gate } of slowed) assert.ok(gate.kind === 'slowed' && gate.until - at <= CLAIM_SLOWDOWN_MS);
  });
});
