/**
 * What a simulation counts: polls and their answers, corrections by resolver (the reply's
 * key), errors by kind, firmware downloads, audit posts, how late polls start (the
 * simulator's own saturation), and convergence times.
 *
 * Convergence: a device's clock starts at its first poll (initial convergence), or at the
 * first poll answered with a correction after it was in step (a change); the next `{}` stops
 * it. The simulator cannot see when an operator changed something, only when a device
 * first hears of it, so the time is from that poll, which is at most one interval late.
 *
 * A device that refuses firmware (`--refuse-firmware`) never stops its clock while the server
 * offers it firmware; how far its other settings got is counted apart (`refusers`): the first
 * {} it gets while refusing (a poll on which the retry policy held the offer back and nothing
 * else differed) means every setting but firmware is in step.
 */

/**
 * How the last answer left a device: the fleet's in-step share is counted from these.
 * `refusing_firmware`: the server has a firmware offer for it that it refused, whatever
 * other corrections it is taking meanwhile.
 */
export type DeviceState = 'new' | 'in_step' | 'drifting' | 'refusing_firmware';

const LAG_SAMPLES_KEPT = 10_000;

export interface Percentiles {
  count: number;
  p50_ms: number | null;
  p99_ms: number | null;
  /** The same times in the devices' own (uncompressed) seconds: ms × speed / 1000. */
  p50_simulated_s: number | null;
  p99_simulated_s: number | null;
}

export interface Snapshot {
  elapsed_s: number;
  okms: number;
  polls: number;
  /** Polls answered per second since the previous snapshot (the whole run for the summary). */
  polls_per_second: number;
  in_step: number;
  in_step_percent: number;
  refusing_firmware: number;
  /** Of those, how many have every other setting in step (they were answered {} since their last other correction). */
  refusing_firmware_otherwise_in_step: number;
  offline: number;
  corrections: Record<string, number>;
  errors: Record<string, number>;
}

/** Convergence times that are also counted in polls. */
export interface PollPercentiles extends Percentiles {
  /** Polls from the one that started the clock to the one that stopped it, both counted. */
  p50_polls: number | null;
  p99_polls: number | null;
  max_polls: number | null;
}

export interface Summary extends Omit<Snapshot, 'polls_per_second'> {
  polls_per_second: number;
  answers: { enrolled: number; in_step: number; corrections: number };
  convergence: { initial: Percentiles; after_change: Percentiles; still_converging: number };
  firmware: { installed: number; downloads: number; resumed: number; interrupted: number; bytes: number; external: number; refused: number; checksum_failures: number };
  audit: { posts: number; records: number };
  refusers: {
    /** Devices of the fleet that refuse firmware (`--refuse-firmware`). */
    devices: number;
    /** Corrections other than firmware they applied. */
    corrections_applied: number;
    /** Per refusing device, from the poll that started its clock to its first {} while refusing: every setting but firmware in step. */
    otherwise_in_step: PollPercentiles;
  };
  /** How late polls started after they were due: near 0 unless the simulator (or the server) cannot keep up. */
  poll_lag_ms: { p50: number | null; p99: number | null };
}

function percentile(sorted: readonly number[], fraction: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

const increment = (counts: Map<string, number>, key: string, by = 1) => counts.set(key, (counts.get(key) ?? 0) + by);
const sortedEntries = (counts: Map<string, number>) => Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));

export class SimulationStats {
  polls = 0;
  enrolled = 0;
  inStepAnswers = 0;
  correctionAnswers = 0;
  readonly corrections = new Map<string, number>();
  readonly errors = new Map<string, number>();
  readonly states = new Map<DeviceState, number>();
  offline = 0;
  readonly firmware = { installed: 0, downloads: 0, resumed: 0, interrupted: 0, bytes: 0, external: 0, refused: 0, checksum_failures: 0 };
  readonly audit = { posts: 0, records: 0 };
  readonly refusers = { otherwiseInStep: 0, correctionsApplied: 0 };
  private readonly refuserConvergence: { ms: number; polls: number }[] = [];
  private readonly initialConvergence: number[] = [];
  private readonly changeConvergence: number[] = [];
  private readonly lags: number[] = [];
  private lagIndex = 0;
  private lastSnapshot: { at: number; polls: number };

  constructor(
    private readonly okms: number,
    private readonly speed: number,
    private readonly startedAt: number,
    private readonly refuserDevices = 0,
  ) {
    this.states.set('new', okms);
    this.lastSnapshot = { at: startedAt, polls: 0 };
  }

  moved(from: DeviceState, to: DeviceState): void {
    if (from === to) return;
    increment(this.states, from, -1);
    increment(this.states, to);
  }

  count(state: DeviceState): number {
    return this.states.get(state) ?? 0;
  }

  correction(resolver: string): void {
    this.correctionAnswers++;
    increment(this.corrections, resolver);
  }

  error(kind: string): void {
    increment(this.errors, kind);
  }

  converged(durationMs: number, afterChange: boolean): void {
    (afterChange ? this.changeConvergence : this.initialConvergence).push(durationMs);
  }

  /** A refusing device was answered {} for the first time since its clock started, after `polls` polls. */
  refuserOtherwiseInStep(durationMs: number, polls: number): void {
    this.refuserConvergence.push({ ms: durationMs, polls });
  }

  lag(ms: number): void {
    this.lags[this.lagIndex++ % LAG_SAMPLES_KEPT] = Math.round(ms);
  }

  snapshot(now: number): Snapshot {
    const seconds = (now - this.lastSnapshot.at) / 1000;
    const rate = seconds > 0 ? (this.polls - this.lastSnapshot.polls) / seconds : 0;
    this.lastSnapshot = { at: now, polls: this.polls };
    return this.view(now, rate);
  }

  summary(now: number, stillConverging: number): Summary {
    const elapsedSeconds = (now - this.startedAt) / 1000;
    const lags = [...this.lags].sort((a, b) => a - b);
    return {
      ...this.view(now, elapsedSeconds > 0 ? this.polls / elapsedSeconds : 0),
      answers: { enrolled: this.enrolled, in_step: this.inStepAnswers, corrections: this.correctionAnswers },
      convergence: { initial: this.percentiles(this.initialConvergence), after_change: this.percentiles(this.changeConvergence), still_converging: stillConverging },
      firmware: { ...this.firmware },
      audit: { ...this.audit },
      refusers: { devices: this.refuserDevices, corrections_applied: this.refusers.correctionsApplied, otherwise_in_step: this.pollPercentiles(this.refuserConvergence) },
      poll_lag_ms: { p50: percentile(lags, 0.5), p99: percentile(lags, 0.99) },
    };
  }

  private view(now: number, pollsPerSecond: number): Snapshot {
    const inStep = this.count('in_step');
    return {
      elapsed_s: Math.round((now - this.startedAt) / 100) / 10,
      okms: this.okms,
      polls: this.polls,
      polls_per_second: Math.round(pollsPerSecond),
      in_step: inStep,
      in_step_percent: Math.round((inStep / this.okms) * 1000) / 10,
      refusing_firmware: this.count('refusing_firmware'),
      refusing_firmware_otherwise_in_step: this.refusers.otherwiseInStep,
      offline: this.offline,
      corrections: sortedEntries(this.corrections),
      errors: sortedEntries(this.errors),
    };
  }

  private pollPercentiles(samples: readonly { ms: number; polls: number }[]): PollPercentiles {
    const polls = samples.map((sample) => sample.polls).sort((a, b) => a - b);
    return {
      ...this.percentiles(samples.map((sample) => sample.ms)),
      p50_polls: percentile(polls, 0.5),
      p99_polls: percentile(polls, 0.99),
      max_polls: polls.length === 0 ? null : polls[polls.length - 1]!,
    };
  }

  private percentiles(durations: readonly number[]): Percentiles {
    const sorted = [...durations].sort((a, b) => a - b);
    const p50 = percentile(sorted, 0.5);
    const p99 = percentile(sorted, 0.99);
    const simulated = (ms: number | null) => (ms === null ? null : Math.round((ms * this.speed) / 100) / 10);
    return {
      count: sorted.length,
      p50_ms: p50 === null ? null : Math.round(p50),
      p99_ms: p99 === null ? null : Math.round(p99),
      p50_simulated_s: simulated(p50),
      p99_simulated_s: simulated(p99),
    };
  }
}

/** "kasFirmware 12, pollingInterval 3", or "none". */
export function countsText(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'none' : entries.map(([key, count]) => `${key} ${count}`).join(', ');
}

/** One line for the progress display. */
export function progressLine(snapshot: Snapshot): string {
  const extras = [
    snapshot.refusing_firmware > 0 && `refusing firmware ${snapshot.refusing_firmware} (otherwise in step ${snapshot.refusing_firmware_otherwise_in_step})`,
    snapshot.offline > 0 && `offline ${snapshot.offline}`,
  ].filter(Boolean);
  return (
    `${snapshot.elapsed_s.toFixed(1)} s | ${snapshot.polls_per_second} polls/s | in step ${snapshot.in_step_percent}% (${snapshot.in_step}/${snapshot.okms})` +
    `${extras.length > 0 ? ` | ${extras.join(', ')}` : ''} | corrections: ${countsText(snapshot.corrections)} | errors: ${countsText(snapshot.errors)}`
  );
}
