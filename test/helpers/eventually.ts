type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/** Waits until `condition` returns a truthy value, checking every 20 ms, and returns it; fails after timeoutMs. */
export async function eventually<T>(condition: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
