interface Entry {
  deadline: number;
  controller: AbortController;
  finished: boolean;
}

/** Entries dropped from the front before the array is compacted. */
const COMPACT_AFTER = 1024;

/**
 * Abort signals that fire a fixed time after they were made, one timer for all of them:
 * AbortSignal.timeout makes a timer, a weak reference and listeners per request, a visible
 * share of a dispatcher's CPU per event. All signals of one queue have the same timeout, so
 * their deadlines come in the order they were made and the queue is first-in first-out;
 * finished entries are dropped as the front reaches them.
 */
export class DeadlineQueue {
  private entries: Entry[] = [];
  private front = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly timeoutMs: number) {}

  /** A signal that aborts with a TimeoutError timeoutMs from now, unless `finish` is called first. */
  start(): { signal: AbortSignal; finish(): void } {
    const entry: Entry = { deadline: performance.now() + this.timeoutMs, controller: new AbortController(), finished: false };
    this.entries.push(entry);
    this.arm();
    return {
      signal: entry.controller.signal,
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
    // Cleared once every signal has finished, so an idle queue holds no timer.
    this.timer = setTimeout(() => this.expire(), Math.ceil(delay));
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (let entry = this.entries[this.front]; entry !== undefined && (entry.finished || entry.deadline <= now); entry = this.entries[this.front]) {
      if (!entry.finished) {
        entry.finished = true;
        entry.controller.abort(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError'));
      }
      this.front++;
    }
    this.dropFinished();
    this.arm();
  }
}
