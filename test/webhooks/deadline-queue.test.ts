import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeadlineQueue } from '../../src/webhooks/deadline-queue.ts';

const TIMEOUT_MS = 30;

test('when a signal is not finished within the timeout, it aborts with a TimeoutError that names the timeout, not earlier', async () => {
  const deadlines = new DeadlineQueue(TIMEOUT_MS);
  const started = performance.now();

  const { signal } = deadlines.start();
  await once(signal, 'abort');

  assert.ok(performance.now() - started >= TIMEOUT_MS - 1);
  assert.equal((signal.reason as Error).name, 'TimeoutError');
  assert.equal((signal.reason as Error).message, `no answer within ${TIMEOUT_MS} ms`);
});

test('when a signal is finished before its deadline, it never aborts', async () => {
  const deadlines = new DeadlineQueue(TIMEOUT_MS);

  const { signal, finish } = deadlines.start();
  finish();
  await sleep(3 * TIMEOUT_MS);

  assert.equal(signal.aborted, false);
});

/** Resolves once the signal has aborted (at once if it has), with the time it was seen aborted. */
const abortSeen = (signal: AbortSignal): Promise<number> =>
  signal.aborted ? Promise.resolve(performance.now()) : once(signal, 'abort').then(() => performance.now());

test('of many signals, exactly those not finished abort, none before its own deadline, whatever order the others finish in', async () => {
  // Long enough that the finishing below comes before the first deadline even on a loaded host.
  const timeoutMs = 1_000;
  const deadlines = new DeadlineQueue(timeoutMs);
  const start = () => {
    const startedAt = performance.now();
    return { ...deadlines.start(), startedAt };
  };
  const first = Array.from({ length: 2_000 }, start);
  await sleep(100);
  const second = Array.from({ length: 10 }, start);
  const all = [...first, ...second];
  const abortTimes = all.map((entry) => abortSeen(entry.signal));
  // Finished out of order: every third of the first batch from the back, all of the second but its last.
  for (let index = first.length - 1; index >= 0; index -= 3) first[index]!.finish();
  second.slice(0, -1).forEach((entry) => entry.finish());
  const expected = [...first.map((_, index) => (first.length - 1 - index) % 3 !== 0), ...second.map((_, index) => index === second.length - 1)];

  const seen = await Promise.all(all.map((entry, index) => (expected[index] ? abortTimes[index]! : sleep(2 * timeoutMs).then(() => undefined))));

  assert.deepEqual(
    all.map((entry) => entry.signal.aborted),
    expected,
  );
  for (const [index, abortedAt] of seen.entries()) {
    if (abortedAt !== undefined) assert.ok(abortedAt - all[index]!.startedAt >= timeoutMs - 1, `signal ${index} aborted ${abortedAt - all[index]!.startedAt} ms after it started`);
  }
});
