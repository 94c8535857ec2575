import type { FanOutClaim } from './queue-repository.ts';

/**
 * Rows a process holds per host: this many times its concurrency (being sent, waiting for a
 * slot, or their outcomes not written yet), so that claims come in batches rather than one per
 * finished delivery.
 */
export const HOST_BACKLOG_FACTOR = 4;
/** A host that answered this recently counts as answering, even with all its slots busy. */
export const ANSWERING_MS = 1_000;

export interface LaneLimits {
  /** Rows sent to one host at once (WEBHOOK_CONCURRENCY_PER_HOST). */
  perHost: number;
  /** Rows sent at once over all hosts (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Rows that fan-outs may hold, counted apart from the claims of due rows (see fanOutClaims). */
  fanOutRoom: number;
}

/** A claimed row with the token of its claim, needed to record its outcome or release it. */
export interface HeldRow<Row> {
  row: Row;
  token: string;
}

/** The rows of one destination host that this process holds. */
interface Lane<Row> {
  /** Being sent. */
  sending: number;
  /** Sent, the outcome not written yet. */
  recording: number;
  waiting: HeldRow<Row>[];
  /** When the host last answered (or the lane was made). */
  answeredAt: number;
}

/**
 * The claimed deliveries a dispatcher holds, in one lane per destination host, of status and
 * fleet events alike: which may be sent now (at most `perHost` per host and `concurrency` in
 * all, so that a hanging host holds only its own lane), how much more each host may take, and
 * which rows go back to the queue. Bookkeeping only: no database, no timers; the caller says
 * what time it is.
 *
 * A row taken leaves exactly once: `finished` after `startable` handed it out, or among the
 * rows that `trimIfNotAnswering` or `takeWaiting` return for release.
 */
export class HostLanes<Row extends { readonly host: string }> {
  /** Rows held per host beside those a fan-out took for a host that answers. */
  readonly maxHeldPerHost: number;
  /** Rows held over all hosts from claims of due rows. */
  readonly maxHeld: number;
  private readonly lanes = new Map<string, Lane<Row>>();
  /** Rows handed out by `startable` and not finished: whether each is sent yet. */
  private readonly inFlight = new Map<Row, { isSent: boolean }>();
  /** Rows a fan-out took, not finished yet: counted against fanOutRoom, not in `held`. */
  private readonly fannedOut = new Set<Row>();
  private heldCount = 0;
  private sendingCount = 0;

  constructor(readonly limits: LaneLimits) {
    this.maxHeldPerHost = limits.perHost * HOST_BACKLOG_FACTOR;
    this.maxHeld = limits.concurrency * HOST_BACKLOG_FACTOR;
  }

  /** Rows being sent, over all hosts. */
  get sending(): number {
    return this.sendingCount;
  }

  /** Rows from claims of due rows not finished yet: waiting in a lane, being sent, or their outcome not written. */
  get held(): number {
    return this.heldCount;
  }

  /** Rows fan-outs may still take. */
  fanOutRoom(): number {
    return this.limits.fanOutRoom - this.fannedOut.size;
  }

  /** The hosts that have a lane, live: a lane emptied during the iteration is skipped. */
  hosts(): IterableIterator<string> {
    return this.lanes.keys();
  }

  /** A lane's rows by stage; zeros for a host without a lane. */
  counts(host: string): { sending: number; recording: number; waiting: number } {
    const lane = this.lanes.get(host);
    return lane ? { sending: lane.sending, recording: lane.recording, waiting: lane.waiting.length } : { sending: 0, recording: 0, waiting: 0 };
  }

  /** The rows of a host that still need it: a sent row waits only for its outcome to be written. */
  backlog(host: string): number {
    return backlogOf(this.lanes.get(host));
  }

  /** How many due rows of a host a claim may take: its share less its backlog, within the process's room. */
  claimRoom(host: string, hostShare: number): number {
    return Math.min(hostShare - this.backlog(host), this.maxHeld - this.heldCount);
  }

  /** Puts claimed rows in their host's lane, to wait for `startable`. */
  take(rows: readonly Row[], token: string, now: number, byFanOut = false): void {
    for (const row of rows) {
      let lane = this.lanes.get(row.host);
      if (!lane) this.lanes.set(row.host, (lane = { sending: 0, recording: 0, waiting: [], answeredAt: now }));
      lane.waiting.push({ row, token });
      if (byFanOut) this.fannedOut.add(row);
      else this.heldCount++;
    }
  }

  /** Takes the waiting rows that may be sent now, wherever a host slot and a process slot are free; they count as being sent. */
  startable(): HeldRow<Row>[] {
    const started: HeldRow<Row>[] = [];
    for (const lane of this.lanes.values()) {
      while (lane.waiting.length > 0 && lane.sending < this.limits.perHost && this.sendingCount < this.limits.concurrency) {
        const held = lane.waiting.shift()!;
        lane.sending++;
        this.sendingCount++;
        this.inFlight.set(held.row, { isSent: false });
        started.push(held);
      }
    }
    return started;
  }

  /**
   * A row handed out by `startable` is sent (or given up): its host slot is free again while its
   * outcome waits to be written, and its host counts as answering. False if it was already.
   */
  sent(row: Row, now: number): boolean {
    const flight = this.inFlight.get(row);
    if (flight === undefined) throw new Error('a row not being sent cannot be sent');
    if (flight.isSent) return false;
    flight.isSent = true;
    const lane = this.lanes.get(row.host)!;
    lane.sending--;
    this.sendingCount--;
    lane.recording++;
    lane.answeredAt = now;
    return true;
  }

  /** A row's attempt is over and its outcome written (or it was cut): it leaves its lane. */
  finished(row: Row, now: number): void {
    this.sent(row, now);
    this.inFlight.delete(row);
    const lane = this.lanes.get(row.host)!;
    lane.recording--;
    this.leave(row, lane);
  }

  /**
   * A host that stopped answering keeps its usual share of waiting rows: the rest (taken by a
   * fan-out while it answered), newest first, are returned for release, for other hosts'
   * deliveries to use the process's room.
   */
  trimIfNotAnswering(host: string, now: number): HeldRow<Row>[] {
    const lane = this.lanes.get(host);
    if (!lane) return [];
    const excess = backlogOf(lane) - this.maxHeldPerHost;
    if (excess <= 0 || this.isAnswering(lane, now)) return [];
    const returned = lane.waiting.splice(lane.waiting.length - Math.min(excess, lane.waiting.length));
    for (const { row } of returned) this.leave(row, lane);
    return returned;
  }

  /** All the rows of a host not started yet, returned for release (a stop). */
  takeWaiting(host: string): HeldRow<Row>[] {
    const lane = this.lanes.get(host);
    if (!lane) return [];
    const returned = lane.waiting.splice(0);
    for (const { row } of returned) this.leave(row, lane);
    return returned;
  }

  /**
   * The claims of a fan-out's rows: a host takes rows while its lane has room (a host that
   * answers, up to fanOutRoom; any other, `hostShare`) and the fan-outs' room has room. Each
   * row's claim lasts as long as the rows ahead of it in its lane may take (one attempt per
   * lane-full of `perHost`), then its own attempt, and the margin. Reads the lanes as they are
   * when asked: deliveries may finish while a fan-out runs.
   */
  fanOutClaims(token: string, now: number, hostShare: number, lease: { attemptMs: number; marginMs: number }): FanOutClaim {
    const taken = new Map<string, number>();
    let room = this.fanOutRoom();
    return (host) => {
      const lane = this.lanes.get(host);
      const position = backlogOf(lane) + (taken.get(host) ?? 0);
      const share = lane === undefined || this.isAnswering(lane, now) ? this.limits.fanOutRoom : hostShare;
      if (room <= 0 || position >= share) return undefined;
      room--;
      taken.set(host, (taken.get(host) ?? 0) + 1);
      return { token, claimedUntil: now + (Math.floor(position / this.limits.perHost) + 1) * lease.attemptMs + lease.marginMs };
    };
  }

  /** A free slot, or an answer within ANSWERING_MS. */
  private isAnswering(lane: Lane<Row>, now: number): boolean {
    return lane.sending < this.limits.perHost || now - lane.answeredAt < ANSWERING_MS;
  }

  /** A row no longer held; its lane goes once it holds nothing. */
  private leave(row: Row, lane: Lane<Row>): void {
    if (!this.fannedOut.delete(row)) this.heldCount--;
    if (lane.sending + lane.recording + lane.waiting.length === 0) this.lanes.delete(row.host);
  }
}

function backlogOf(lane: Lane<unknown> | undefined): number {
  return lane ? lane.sending + lane.waiting.length : 0;
}
