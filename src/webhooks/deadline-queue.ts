interface Entry {
  deadline: number;
  expire: (reason: Error) => void;
  finished: boolean;
}

/** Entries dropped from the front before the array is compacted. */
const COMPACT_AFTER = 1024;

/**
 * Deadlines a fixed time after they were set, one timer for all of them: AbortSignal.timeout
 * makes a timer, a weak reference and listeners per request, a visible share of a
 * dispatcher's CPU per event. All deadlines of one queue have the same timeout, so they come
 * in the order they were set and the queue is first-in first-out; finished entries are
 * dropped as the front reaches them.
 */
export class DeadlineQueue {
  private entries: Entry[] = [];
  private front = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly timeoutMs: number) {}

  /** Calls `expire` with a TimeoutError timeoutMs from now, unless `finish` is called first. */
  start(expire: (reason: Error) => void): { finish(): void } {
    const entry: Entry = { deadline: performance.now() + this.timeoutMs, expire, finished: false };
    this.entries.push(entry);
    this.arm();
    return {
      finish: () => {
        entry.finished = true;
        this.dropFinished();
      },
    };
  }

  private dropFinished(): void {
    while (this.front < this.entries.length && this.entries[this.front]!.finished) this.front++;
    if (this.front === this.entries.length) {
      this.entries = [];
      this.front = 0;
      clearTimeout(this.timer);
      this.timer = undefined;
    } else if (this.front >= COMPACT_AFTER && this.front * 2 >= this.entries.length) {
      this.entries = this.entries.slice(this.front);
      this.front = 0;
    }
  }

  private arm(): void {
    if (this.timer !== undefined || this.front === this.entries.length) return;
    const delay = Math.max(0, this.entries[this.front]!.deadline - performance.now());
    // Cleared once every deadline has finished, so an idle queue holds no timer.
    this.timer = setTimeout(() => this.expire(), Math.ceil(delay));
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const expired: Entry[] = [];
    for (let entry = this.entries[this.front]; entry !== undefined && (entry.finished || entry.deadline <= now); entry = this.entries[this.front]) {
      if (!entry.finished) {
        entry.finished = true;
        expired.push(entry);
      }
      this.front++;
    }
    this.dropFinished();
    this.arm();
    // Last, with the queue in order: an expiry may finish deadlines or set new ones at once.
    for (const entry of expired) entry.expire(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError'));
  }
}
