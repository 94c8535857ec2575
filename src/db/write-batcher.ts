import { isDatabaseUnavailable } from './connection-errors.ts';
import type { Db } from './database.ts';

/**
 * How a dialect commits small writes that arrive close together (the config poll's):
 * - `batch`: the work of the calls that arrive in the same event-loop turn (up to maxSize)
 *   runs in one transaction, so they share one commit;
 * - `transaction`: one transaction per call.
 * Every call's writes commit together (a poll and its status events).
 */
export type WriteGrouping = { kind: 'batch'; maxSize: number } | { kind: 'transaction' };

/** Values computed once per transaction and shared by the calls in it (e.g. a fleet-wide read). */
export class BatchScope {
  readonly #values = new Map<symbol, Promise<unknown>>();

  once<T>(key: symbol, compute: () => Promise<T>): Promise<T> {
    let value = this.#values.get(key) as Promise<T> | undefined;
    if (!value) {
      value = compute();
      this.#values.set(key, value);
    }
    return value;
  }
}

/** The writing part of one call: runs on `db`, a transaction. */
export type WriteWork<In, Out> = (db: Db, input: In, scope: BatchScope) => Promise<Out>;

interface Pending<In, Out> {
  input: In;
  resolve(value: Out): void;
  reject(reason: unknown): void;
}

/**
 * Runs `work` for each call as the grouping says. Each call's promise settles only after
 * the transaction holding its work has committed (or failed), so a caller never answers for
 * a write that may still be lost. When a batch's transaction fails, its calls run again one
 * transaction each, so that only a failing call fails; unless the database is unavailable,
 * which fails them all at once.
 */
export function createWriteBatcher<In, Out>(
  db: Db,
  grouping: WriteGrouping,
  work: WriteWork<In, Out>,
  /**
   * The key of the row a call locks first. A batch runs its calls in this key's order, so
   * that two batches locking the same rows take them in the same order and cannot deadlock.
   */
  lockKey?: (input: In) => string,
): (input: In) => Promise<Out> {
  const alone = (input: In) => db.transaction().execute((tx) => work(tx, input, new BatchScope()));
  if (grouping.kind === 'transaction') return alone;

  let queue: Pending<In, Out>[] = [];

  async function runBatch(arrived: Pending<In, Out>[]): Promise<void> {
    const batch = lockKey ? arrived.map((call) => ({ call, key: lockKey(call.input) })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(({ call }) => call) : arrived;
    let results: Out[];
    try {
      results = await db.transaction().execute(async (tx) => {
        const scope = new BatchScope();
        const outputs: Out[] = [];
        for (const { input } of batch) outputs.push(await work(tx, input, scope));
        return outputs;
      });
    } catch (error) {
      // Without a database the calls would only fail again, one (connection timeout) at a time.
      if (batch.length === 1 || isDatabaseUnavailable(error)) return batch.forEach((call) => call.reject(error));
      for (const call of batch) await alone(call.input).then(call.resolve, call.reject);
      return;
    }
    batch.forEach((call, index) => call.resolve(results[index]!));
  }

  function flush(): void {
    const batch = queue;
    queue = [];
    if (batch.length > 0) void runBatch(batch);
  }

  return (input) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
      else if (queue.length >= grouping.maxSize) flush();
    });
}

