import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DeadlineQueue } from '../../src/webhooks/deadline-queue.ts';

const TIMEOUT_MS = 30;

/** A deadline of the queue, with when it was set, whether it expired, and a promise of its expiry (the time and reason). */
function track(deadlines: DeadlineQueue) {
  const startedAt = performance.now();
  let expired = false;
  let seen!: (expiry: { at: number; reason: Error }) => void;
  const expiry = new Promise<{ at: number; reason: Error }>((resolve) => (seen = resolve));
  const { finish } = deadlines.start((reason) => {
    expired = true;
    seen({ at: performance.now(), reason });
  });
  return { startedAt, finish, expiry, expired: () => expired };
}

test('when a deadline is not finished within the timeout, it expires with a TimeoutError that names the timeout, not earlier', async () => {
  const deadlines = new DeadlineQueue(TIMEOUT_MS);

  const deadline = track(deadlines);
  const { at, reason } = await deadline.expiry;

  assert.ok(at - deadline.startedAt >= TIMEOUT_MS - 1);
  assert.equal(reason.name, 'TimeoutError');
  assert.equal(reason.message, `no answer within ${TIMEOUT_MS} ms`);
});

test('when a deadline is finished before it passes, it never expires', async () => {
  const deadlines = new DeadlineQueue(TIMEOUT_MS);

  const deadline = track(deadlines);
  deadline.finish();
  await sleep(3 * TIMEOUT_MS);

  assert.equal(deadline.expired(), false);
});

test('when an expiry finishes its own deadline and sets a new one at once (an aborted request fails synchronously), the new one expires in turn', async () => {
  const deadlines = new DeadlineQueue(TIMEOUT_MS);
  let next: ReturnType<typeof track> | undefined;
  const { finish } = deadlines.start(() => {
    finish();
    next = track(deadlines);
  });

  await sleep(2 * TIMEOUT_MS);
  const { at } = await next!.expiry;

  assert.ok(at - next!.startedAt >= TIMEOUT_MS - 1);
});

test('of many deadlines, exactly those not finished expire, none before its own time, whatever order the others finish in', async () => {
  // Long enough that the finishing below comes before the first deadline even on a loaded host.
  const timeoutMs = 1_000;
  const deadlines = new DeadlineQueue(timeoutMs);
  const first = Array.from({ length: 2_000 }, () => track(deadlines));
  await sleep(100);
  const second = Array.from({ length: 10 }, () => track(deadlines));
  const all = [...first, ...second];
  // Finished out of order: every third of the first batch from the back, all of the second but its last.
  for (let index = first.length - 1; index >= 0; index -= 3) first[index]!.finish();
  second.slice(0, -1).forEach((deadline) => deadline.finish());
  const expected = [...first.map((_, index) => (first.length - 1 - index) % 3 !== 0), ...second.map((_, index) => index === second.length - 1)];

  const expiries = await Promise.all(all.map((deadline, index) => (expected[index] ? deadline.expiry : sleep(2 * timeoutMs).then(() => undefined))));

  assert.deepEqual(
    all.map((deadline) => deadline.expired()),
    expected,
  );
  for (const [index, expiry] of expiries.entries()) {
    if (expiry !== undefined) assert.ok(expiry.at - all[index]!.startedAt >= timeoutMs - 1, `deadline ${index} expired ${expiry.at - all[index]!.startedAt} ms after it was set`);
  }
});
