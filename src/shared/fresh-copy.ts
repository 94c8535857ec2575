/**
 * A process's copy of something other processes may change (revoked tokens, role bindings),
 * read again when a use finds it older than `maxAgeMs`: a change committed now is seen by
 * every process from `maxAgeMs` later. Concurrent uses share one read, and a read that
 * started too early for a use is followed by another.
 */
export interface FreshCopy<T> {
  /** The value, read at most `maxAgeMs` before this call. */
  get(): Promise<T>;
}

export function freshCopy<T>(read: (startedAt: number) => Promise<T>, maxAgeMs: number, clock: () => number = Date.now): FreshCopy<T> {
  let value: T | undefined;
  let readAt = -Infinity;
  let reading: Promise<void> | undefined;
  const reload = () =>
    (reading ??= (async () => {
      const startedAt = clock();
      try {
        value = await read(startedAt);
        readAt = startedAt;
      } finally {
        reading = undefined;
      }
    })());
  return {
    async get() {
      const askedAt = clock();
      while (askedAt - readAt >= maxAgeMs) await reload();
      return value as T;
    },
  };
}
