import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FixedWindowLimit } from '../../src/http/fixed-window-limit.ts';

const WINDOW_MS = 60_000;

/** A limit on a clock the test moves. */
function limitAt(max: number, keysKept: number) {
  const clock = { now: 1_800_000_000_000 };
  return { clock, limit: new FixedWindowLimit(max, WINDOW_MS, keysKept, () => clock.now) };
}

const step = fc.record({
  key: fc.constantFrom('a', 'b', 'c'),
  counted: fc.boolean(),
  /** How far the clock moves before the request: mostly within a window, sometimes across one. */
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 50_000, max: 130_000 })),
});

test('each key may make max requests in the window its first one starts, and then waits for the rest of that window', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.array(step, { maxLength: 60 }), (max, steps) => {
      const { clock, limit } = limitAt(max, 10);
      // The rule, written out: a window per key, from its first request, of WINDOW_MS.
      const windows = new Map<string, { startedAt: number; requests: number }>();
      const secondsLeft = (window: { startedAt: number }) => Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - clock.now) / 1000));
      for (const { key, counted, advanceMs } of steps) {
        clock.now += advanceMs;
        let window = windows.get(key);
        if (window !== undefined && clock.now >= window.startedAt + WINDOW_MS) window = undefined;
        if (counted) {
          if (window === undefined) windows.set(key, (window = { startedAt: clock.now, requests: 0 }));
          window.requests += 1;
          assert.equal(limit.count(key), window.requests > max ? secondsLeft(window) : undefined);
        } else {
          assert.equal(limit.check(key), window !== undefined && window.requests >= max ? secondsLeft(window) : undefined);
        }
      }
    }),
  );
});

test('the request after the limit is refused until the window ends, with the seconds left rounded up', () => {
  const { clock, limit } = limitAt(2, 10);
  assert.equal(limit.count('okm'), undefined);
  clock.now += 10_500;
  assert.equal(limit.count('okm'), undefined);
  assert.equal(limit.check('okm'), 50);
  assert.equal(limit.count('okm'), 50);
  clock.now += 48_999;
  assert.equal(limit.count('okm'), 1);
  clock.now += 501;
  assert.equal(limit.check('okm'), undefined);
  assert.equal(limit.count('okm'), undefined);
});

test('checking a key does not count it', () => {
  const { limit } = limitAt(1, 10);
  for (let i = 0; i < 5; i++) assert.equal(limit.check('client'), undefined);
  assert.equal(limit.count('client'), undefined);
  assert.equal(limit.check('client'), 60);
});

test('beyond the keys kept, the least recently used key is dropped and starts its count again', () => {
  const { limit } = limitAt(1, 2);
  limit.count('a');
  limit.count('b');
  assert.equal(limit.count('a'), 60, 'a is over its limit, and now the most recently used');
  limit.count('c');
  assert.equal(limit.count('a'), 60, 'b was dropped, not a');
  assert.equal(limit.count('b'), undefined, 'b starts again');
});
