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

test('beyond the keys kept, the key that came first is dropped and starts its count again, however recently it was used', () => {
  const { limit } = limitAt(1, 2);
  limit.count('a');
  limit.count('b');
  assert.equal(limit.count('a'), 60, 'a is over its limit; it still came first');
  limit.count('c');
  assert.equal(limit.count('b'), 60, 'b was kept');
  assert.equal(limit.count('a'), undefined, 'a was dropped and starts again');
});

test("a key's next window keeps the key's place in the order of dropping", () => {
  const { clock, limit } = limitAt(1, 2);
  limit.count('a');
  clock.now += 1_000;
  limit.count('b');
  clock.now += WINDOW_MS;
  assert.equal(limit.count('a'), undefined, "a's window ended, and a starts a new one");
  limit.count('c');
  assert.equal(limit.check('a'), undefined, 'a came first, and was dropped');
  assert.equal(limit.count('b'), undefined, "b's window ended: it starts a new one");
  assert.equal(limit.check('c'), 60);
});

test('the keys kept hold the windows of the keys that came last', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 80 }), (keysKept, keys) => {
      const { limit } = limitAt(1, keysKept);
      // The rule, written out for one request a window: a key held is refused; another is
      // counted and held, last, and beyond the keys kept the first held is dropped.
      const held: string[] = [];
      for (const key of keys) {
        assert.equal(limit.count(key) !== undefined, held.includes(key), key);
        if (!held.includes(key)) {
          held.push(key);
          if (held.length > keysKept) held.shift();
        }
      }
      for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) assert.equal(limit.check(key) !== undefined, held.includes(key), key);
    }),
  );
});
