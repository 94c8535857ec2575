import { isDatabaseUnavailable, isTransactionConflict } from './connection-errors.ts';
import type { Db } from './database.ts';

/**
 * How a dialect commits small writes that arrive close together (the config poll's):
 * - `batch`: the work of the calls that arrive in the same event-loop turn (up to maxSize)
 *   runs in one transaction, so they share one commit. With `batchesAtOnce`, at most that
 *   many batches run at a time: calls that arrive meanwhile wait and go together in the next
 *   one, so that under load a batch's statements and commit are shared by many calls rather
 *   than run by many small batches side by side (group commit);
 * - `transaction`: one transaction per call.
 * Every call's writes commit together (a poll and its status events).
 */
export type WriteGrouping = { kind: 'batch'; maxSize: number; batchesAtOnce?: number } | { kind: 'transaction' };

/** The writing part of a batch of calls: runs on `db`, a transaction, and answers each input, in order. */
export type WriteWork<In, Out> = (db: Db, inputs: readonly In[]) => Promise<Out[]>;

interface Pending<In, Out> {
  input: In;
  resolve(value: Out): void;
  reject(reason: unknown): void;
}

/** Runs of a transaction that lost a race for locks (isTransactionConflict) before its failure stands. */
const CONFLICT_RUNS = 3;

/** Runs `transaction`, again when it lost a race for locks, up to CONFLICT_RUNS times in all. */
async function runRetryingConflicts<T>(transaction: () => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await transaction();
    } catch (error) {
      if (run >= CONFLICT_RUNS || !isTransactionConflict(error)) throw error;
    }
  }
}

/**
 * Runs `work` as the grouping says: once for each batch of calls, or once for each call. Each
 * call's promise settles only after the transaction holding its work has committed (or
 * failed), so a caller never answers for a write that may still be lost. When a batch's transaction fails, its calls run again one
 * transaction each, so that only a failing call fails; unless the database is unavailable,
 * which fails them all at once. A transaction that lost a race for locks (a deadlock, a NOWAIT
 * lock taken) runs again first, up to CONFLICT_RUNS times.
 */
export function createWriteBatcher<In, Out>(
  db: Db,
  grouping: WriteGrouping,
  work: WriteWork<In, Out>,
  /**
   * The key of the row a call locks first. A batch gives its calls to `work` in this key's
   * order, so that two batches locking the same rows take them in the same order and cannot
   * deadlock.
   */
  lockKey?: (input: In) => string,
): (input: In) => Promise<Out> {
  const alone = (input: In) => runRetryingConflicts(() => db.transaction().execute(async (tx) => (await work(tx, [input]))[0]!));
  if (grouping.kind === 'transaction') return alone;

  let queue: Pending<In, Out>[] = [];

  async function runBatch(arrived: Pending<In, Out>[]): Promise<void> {
    const batch = lockKey ? arrived.map((call) => ({ call, key: lockKey(call.input) })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(({ call }) => call) : arrived;
    let results: Out[];
    try {
      results = await runRetryingConflicts(() => db.transaction().execute((tx) => work(tx, batch.map((call) => call.input))));
    } catch (error) {
      // Without a database the calls would only fail again, one (connection timeout) at a time.
      if (batch.length === 1 || isDatabaseUnavailable(error)) return batch.forEach((call) => call.reject(error));
      for (const call of batch) await alone(call.input).then(call.resolve, call.reject);
      return;
    }
    batch.forEach((call, index) => call.resolve(results[index]!));
  }

  const { maxSize, batchesAtOnce = Infinity } = grouping;
  let running = 0;

  function flush(): void {
    while (queue.length > 0 && running < batchesAtOnce) {
      const batch = queue.length <= maxSize ? queue : queue.slice(0, maxSize);
      queue = batch === queue ? [] : queue.slice(maxSize);
      running += 1;
      // runBatch settles every call itself and never rejects.
      void runBatch(batch).finally(() => {
        running -= 1;
        flush();
      });
    }
  }

  return (input) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
      else if (queue.length >= grouping.maxSize) flush();
    });
}

