interface Window {
  /** When the key's first request of this window came (ms since the epoch). */
  startedAt: number;
  requests: number;
}

/**
 * A rate limit counted in this process's memory, in fixed windows: each key may make `max`
 * requests in the `windowMs` that start with its first, then its requests are over the limit
 * until that window ends. The windows of at most `keysKept` keys are kept: beyond that, the key
 * that came first is dropped, so memory stays bounded, and a dropped key only starts its count
 * again.
 *
 * Synchronous: every poll counts here, and @fastify/rate-limit's limiters, asynchronous so
 * that a store may be a remote one, counted about 6 k instructions a poll (docs/adr/0111).
 * The windows are one Map, in the order their keys came (a Map keeps its insertion order), and
 * a key's next window reuses its entry: a poll then reads its serial number's window and writes
 * only that, where an LRU list also rewrote the entry's neighbours, in a fleet's worth of keys
 * that the CPU's caches do not hold (docs/adr/0112).
 */
export class FixedWindowLimit {
  /** Each key's window, in the order the keys came. */
  readonly #windows = new Map<string, Window>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly keysKept: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Counts a request of `key`: undefined when it is within the limit, else the whole seconds (at least 1) until its window ends. */
  count(key: string): number | undefined {
    const now = this.clock();
    let window = this.#windows.get(key);
    if (window === undefined) {
      window = this.#keep(key, now);
    } else if (window.startedAt + this.windowMs <= now) {
      window.startedAt = now;
      window.requests = 0;
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

  /** A window for a key not held, starting now; the key that came first is dropped when the keys kept are all held. */
  #keep(key: string, now: number): Window {
    if (this.#windows.size >= this.keysKept) {
      const first = this.#windows.keys().next();
      if (!first.done) this.#windows.delete(first.value);
    }
    const window = { startedAt: now, requests: 0 };
    this.#windows.set(key, window);
    return window;
  }

  #secondsLeft(window: Window, now: number): number {
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
  }
}
