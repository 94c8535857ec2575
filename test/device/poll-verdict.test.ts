import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { decidePoll, type PollVerdict } from '../../src/device/poll-verdict.ts';
import { NOTHING_RECORDED, pollsSentWithoutEffect, type CorrectionRecord } from '../../src/okm/correction-record.ts';
import type { ReportedState } from '../../src/device/reported.ts';
import { resolve } from '../../src/device/resolvers/index.ts';
import type { DesiredState } from '../../src/device/resolvers/types.ts';
import { DEFAULT_RETRY_POLICY, backoffPolls, type RetryPolicy } from '../../src/shared/retry-policy.ts';
import { applyCorrection, firmwareOffers } from '../../src/simulator/device.ts';
import { anyDesiredState, anyReportedState } from './resolvers/arbitraries.ts';
import { SERVER_TIME, desiredState, firmwareOffer, reportInSync } from './resolvers/fixtures.ts';

const STRICT: RetryPolicy = { offers: 0, backoffPolls: [1], maxBackoffPolls: 1 };

interface Run {
  verdicts: PollVerdict[];
  records: CorrectionRecord[];
}

/**
 * Polls `count` times a device that applies every correction but firmware offers (or none, if
 * it `ignoresCorrections`), as the poll service would: each poll's record is the next one's previous.
 */
function pollRepeatedly(desired: DesiredState, start: ReportedState, count: number, { policy = DEFAULT_RETRY_POLICY, stuckAfterPolls = 3, ignoresCorrections = false } = {}): Run {
  let reported = start;
  let previous = NOTHING_RECORDED;
  const run: Run = { verdicts: [], records: [] };
  for (let poll = 1; poll <= count; poll++) {
    const verdict = decidePoll({ desired, reported, previous, poll, now: SERVER_TIME + poll * 1000, policyFor: () => policy, stuckAfterPolls });
    run.verdicts.push(verdict);
    run.records.push(verdict.record);
    previous = verdict.record;
    if (!ignoresCorrections && firmwareOffers(verdict.answer).length === 0) reported = applyCorrection(reported, verdict.answer);
  }
  return run;
}

const keysOf = (run: Run) => run.verdicts.map(({ answer }) => Object.keys(answer)[0] ?? '{}');

const kasRefuser = () => {
  const desired = desiredState({ firmware: { kas: firmwareOffer('2.10.0'), batch_key: null, wireless_key: null }, cacheMode: 2 });
  return { desired, reported: reportInSync(desired, { kasFirmware: '2.9.9', cacheMode: 1, kasDateTime: SERVER_TIME - 600_000 }) };
};

describe('a poll\'s verdict', () => {
  test('a steady poll in step changes nothing and emits nothing', () => {
    const desired = desiredState();
    const verdict = decidePoll({ desired, reported: reportInSync(desired), previous: NOTHING_RECORDED, poll: 7, now: SERVER_TIME, policyFor: () => DEFAULT_RETRY_POLICY, stuckAfterPolls: 3 });

    assert.deepEqual(verdict.answer, {});
    assert.equal(verdict.changed, false);
    assert.equal(verdict.record, NOTHING_RECORDED);
    assert.deepEqual(verdict.events, []);
  });

  test('an OKM sent one correction on 3 polls in a row without effect is stuck on it from the third; the record is written on the first and the third only', () => {
    const desired = desiredState({ pollingInterval: 150 });
    const ignoring = pollRepeatedly(desired, reportInSync(desired, { pollingInterval: 300 }), 5, { policy: STRICT, ignoresCorrections: true });

    assert.deepEqual(keysOf(ignoring), Array(5).fill('pollingInterval'));
    assert.deepEqual(
      ignoring.verdicts.map((verdict) => verdict.changed),
      [true, false, true, false, false],
    );
    assert.deepEqual(
      ignoring.records.map((record) => record.stuck?.resolver ?? null),
      [null, null, 'pollingInterval', 'pollingInterval', 'pollingInterval'],
    );
    assert.deepEqual(ignoring.verdicts[2]!.events, [{ type: 'okm.stuck', stuck: { resolver: 'pollingInterval', since: SERVER_TIME + 3000 }, polls: 3 }]);
    assert.equal(pollsSentWithoutEffect(ignoring.records[4]!, 'pollingInterval', 5), 5);
  });

  test('a stuck OKM is unstuck when it reports the corrected value, with okm.unstuck', () => {
    const desired = desiredState({ pollingInterval: 150 });
    const stuck = pollRepeatedly(desired, reportInSync(desired, { pollingInterval: 300 }), 3, { policy: STRICT, ignoresCorrections: true }).records.at(-1)!;

    const verdict = decidePoll({ desired, reported: reportInSync(desired), previous: stuck, poll: 4, now: SERVER_TIME + 4000, policyFor: () => STRICT, stuckAfterPolls: 3 });

    assert.deepEqual(verdict.answer, {});
    assert.equal(verdict.record.stuck, null);
    assert.deepEqual(verdict.events, [{ type: 'okm.unstuck', stuck: stuck.stuck!, polls: 3 }]);
    assert.deepEqual(verdict.record, NOTHING_RECORDED);
  });

  test('a stuck OKM is unstuck when the desired value changes: the new correction starts a new row', () => {
    const reported = reportInSync(desiredState(), { pollingInterval: 300 });
    const stuck = pollRepeatedly(desiredState({ pollingInterval: 150 }), reported, 3, { policy: STRICT, ignoresCorrections: true }).records.at(-1)!;

    const verdict = decidePoll({ desired: desiredState({ pollingInterval: 60 }), reported, previous: stuck, poll: 4, now: SERVER_TIME + 4000, policyFor: () => STRICT, stuckAfterPolls: 3 });

    assert.deepEqual(verdict.answer, { pollingInterval: 60 });
    assert.equal(verdict.record.stuck, null);
    assert.equal(verdict.record.sincePoll, 4);
    assert.deepEqual(verdict.events.map((event) => event.type), ['okm.unstuck']);
  });

  test('the clock\'s correction is the same one on every poll, though it carries the poll\'s time', () => {
    const desired = desiredState();
    // Each poll's correction is a new server time; the device keeps its wrong clock.
    const ignoring: Run = { verdicts: [], records: [] };
    let previous = NOTHING_RECORDED;
    for (let poll = 1; poll <= 3; poll++) {
      const verdict = decidePoll({
        desired: { ...desired, serverTime: SERVER_TIME + poll * 150_000 },
        reported: reportInSync(desired, { kasDateTime: SERVER_TIME - 600_000 }),
        previous,
        poll,
        now: SERVER_TIME + poll,
        policyFor: () => STRICT,
        stuckAfterPolls: 3,
      });
      ignoring.verdicts.push(verdict);
      previous = verdict.record;
    }

    assert.equal(previous.stuck?.resolver, 'kasDateTime');
    assert.deepEqual(ignoring.verdicts.map((verdict) => verdict.changed), [true, false, true]);
  });

  test('with the default policy, a KAS firmware offer the device does not take is made 3 times, then held back 1, 2, 4, 8, 16, 32, 32 polls while the next resolvers answer', () => {
    const { desired, reported } = kasRefuser();
    const run = pollRepeatedly(desired, reported, 3 + 1 + 3 + 2 + 3 + 4 + 3 + 8 + 3 + 16 + 3 + 32 + 3 + 32 + 3);
    const keys = keysOf(run);

    const rounds: string[] = [];
    for (const wait of [1, 2, 4, 8, 16, 32, 32]) rounds.push(...Array(3).fill('kasFirmware'), ...Array(wait).fill('other'));
    rounds.push(...Array(3).fill('kasFirmware'));
    assert.deepEqual(
      keys.map((key) => (key === 'kasFirmware' ? key : 'other')),
      rounds,
    );
    // Held back, the offer lets the clock, then the cache mode, be corrected; then nothing is left but the offer.
    assert.deepEqual(keys.slice(3, 4), ['kasDateTime']);
    assert.deepEqual(keys.slice(7, 9), ['cacheMode', '{}']);
    assert.equal(run.records.at(-1)!.holds.length, 1);
  });

  test('a refused firmware offer makes the OKM stuck on it, and it stays stuck while the offer is held back', () => {
    const { desired, reported } = kasRefuser();
    const run = pollRepeatedly(desired, reported, 40);

    assert.equal(run.records[1]!.stuck, null);
    assert.deepEqual(run.records.slice(2).map((record) => record.stuck?.resolver), Array(38).fill('kasFirmware'));
    assert.equal(run.verdicts.flatMap((verdict) => verdict.events).length, 1);
  });

  test('{"offers": 0} keeps strict seed order (contract §15.2): the offer on every poll, the clock never corrected', () => {
    const { desired, reported } = kasRefuser();
    const run = pollRepeatedly(desired, reported, 20, { policy: STRICT });

    assert.deepEqual(keysOf(run), Array(20).fill('kasFirmware'));
    assert.deepEqual(run.records.at(-1)!.holds, []);
  });

  test('once the device takes the offer, its hold is dropped and the OKM is unstuck', () => {
    const { desired, reported } = kasRefuser();
    const refused = pollRepeatedly(desired, reported, 5).records.at(-1)!;
    assert.equal(refused.holds.length, 1);

    const verdict = decidePoll({
      desired,
      reported: reportInSync(desired),
      previous: refused,
      poll: 6,
      now: SERVER_TIME,
      policyFor: () => DEFAULT_RETRY_POLICY,
      stuckAfterPolls: 3,
    });

    assert.deepEqual(verdict.answer, {});
    assert.deepEqual(verdict.record, NOTHING_RECORDED);
    assert.deepEqual(verdict.events.map((event) => event.type), ['okm.unstuck']);
  });

  test('a new version of a held-back offer is offered at once, in a new round', () => {
    const { desired, reported } = kasRefuser();
    const held = pollRepeatedly(desired, reported, 3).records.at(-1)!;
    const newer = { ...desired, firmware: { ...desired.firmware, kas: firmwareOffer('2.11.0') } };

    const verdict = decidePoll({ desired: newer, reported, previous: held, poll: 4, now: SERVER_TIME, policyFor: () => DEFAULT_RETRY_POLICY, stuckAfterPolls: 3 });

    assert.equal((verdict.answer.kasFirmware as { version: string }).version, '2.11.0');
    assert.deepEqual(verdict.record.holds, []);
    assert.equal(verdict.record.stuck, null);
  });
});

describe('the verdict, for any desired and reported state', () => {
  test('with no holds recorded and the retry policy off, it answers what the resolver chain answers', () => {
    fc.assert(
      fc.property(anyDesiredState, anyReportedState, fc.integer({ min: 1, max: 1_000 }), (desired, reported, poll) => {
        const verdict = decidePoll({ desired, reported, previous: NOTHING_RECORDED, poll, now: SERVER_TIME, policyFor: () => STRICT, stuckAfterPolls: 3 });
        assert.deepEqual(verdict.answer, resolve(desired, reported) ?? {});
        assert.equal(verdict.changed, Object.keys(verdict.answer).length > 0);
      }),
    );
  });

  test('polling the same state again and again: offers come in rounds of `offers`, each followed by its backoff of other answers; the record changes only when the answer, a hold or stuck does', () => {
    const anyPolicy = fc.record({
      offers: fc.integer({ min: 0, max: 5 }),
      backoffPolls: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }),
      maxBackoffPolls: fc.integer({ min: 1, max: 20 }),
    });
    fc.assert(
      fc.property(anyDesiredState, anyReportedState, anyPolicy, fc.integer({ min: 1, max: 5 }), (desired, reported, policy, stuckAfterPolls) => {
        const steady = { ...desired, pendingMessage: null };
        const run: PollVerdict[] = [];
        let previous = NOTHING_RECORDED;
        for (let poll = 1; poll <= 120; poll++) {
          const verdict = decidePoll({ desired: steady, reported, previous, poll, now: SERVER_TIME, policyFor: () => policy, stuckAfterPolls });
          if (!verdict.changed) assert.equal(verdict.record, previous);
          run.push(verdict);
          previous = verdict.record;
        }
        const first = resolve(steady, reported);
        const firstKey = first && Object.keys(first)[0];
        const retried = firstKey === 'kasFirmware' || firstKey === 'batchKeyFirmware' || firstKey === 'wirelessKeyFirmware';
        const keys = run.map(({ answer }) => Object.keys(answer)[0] ?? '{}');
        if (!retried || policy.offers === 0) {
          assert.deepEqual(keys, Array(120).fill(firstKey ?? '{}'));
          if (firstKey) assert.equal(previous.stuck?.resolver, stuckAfterPolls <= 120 ? firstKey : undefined);
          return;
        }
        // The first resolver's offer in rounds: `offers` polls, then the round's backoff without it.
        let position = 0;
        for (let round = 1; position < keys.length; round++) {
          for (let offer = 0; offer < policy.offers && position < keys.length; offer++, position++) assert.equal(keys[position], firstKey, `poll ${position + 1}`);
          for (let wait = 0; wait < backoffPolls(policy, round) && position < keys.length; wait++, position++) assert.notEqual(keys[position], firstKey, `poll ${position + 1}`);
        }
        assert.ok(previous.holds.every((hold, index) => previous.holds.findIndex((other) => other.resolver === hold.resolver) === index), 'one hold per resolver');
      }),
      { numRuns: 200 },
    );
  });
});

describe('the backoff', () => {
  test('follows the list, then doubles its last entry, never past the cap', () => {
    const policy: RetryPolicy = { offers: 3, backoffPolls: [1, 2, 4, 8], maxBackoffPolls: 32 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 20].map((round) => backoffPolls(policy, round)),
      [1, 2, 4, 8, 16, 32, 32, 32],
    );
  });
});
