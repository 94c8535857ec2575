import { LruMap } from 'toad-cache';

interface Window {
  /** When the key's first request of this window came (ms since the epoch). */
  startedAt: number;
  requests: number;
}

/**
 * A rate limit counted in this process's memory, in fixed windows: each key may make `max`
 * requests in the `windowMs` that start with its first, then its requests are over the limit
 * until that window ends. The windows of at most `keysKept` keys are kept, the least recently
 * used dropped first: memory stays bounded, and a dropped key only starts its count again.
 *
 * Synchronous: every poll counts here, and @fastify/rate-limit's limiters, asynchronous so
 * that a store may be a remote one, counted about 6 k instructions a poll (docs/adr/0111).
 */
export class FixedWindowLimit {
  readonly #windows: LruMap<Window>;

  constructor(
    readonly max: number,
    readonly windowMs: number,
    keysKept: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.#windows = new LruMap<Window>(keysKept);
  }

  /** Counts a request of `key`: undefined when it is within the limit, else the whole seconds (at least 1) until its window ends. */
  count(key: string): number | undefined {
    const now = this.clock();
    let window = this.#windows.get(key);
    if (window === undefined || window.startedAt + this.windowMs <= now) {
      window = { startedAt: now, requests: 0 };
      this.#windows.set(key, window);
    }
    window.requests += 1;
    return window.requests > this.max ? this.#secondsLeft(window, now) : undefined;
  }

  /** Whether `key` has used up its limit, without counting a request: undefined when it has not, else the whole seconds until its window ends. */
  check(key: string): number | undefined {
    const now = this.clock();
    const window = this.#windows.get(key);
    if (window === undefined || window.startedAt + this.windowMs <= now) return undefined;
    return window.requests >= this.max ? this.#secondsLeft(window, now) : undefined;
  }

  #secondsLeft(window: Window, now: number): number {
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
  }
}
