import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import type { Settings } from '../config/settings.ts';
import { createOutageLog, isDatabaseUnavailable } from '../db/connection-errors.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { DeadlineQueue } from './deadline-queue.ts';
import { pruneDeliveryFailures } from './delivery-log-repository.ts';
import { postStatusEvent, type AttemptResult, type StatusEvent } from './delivery.ts';
import {
  claimDueFleetDeliveries,
  pruneFleetDeliveries,
  recordFleetAttempts,
  releaseFleetClaims,
  type ClaimedFleetDelivery,
} from './fleet-deliveries-repository.ts';
import type { WebhookEvent } from './fleet-events.ts';
import type { StatusEventMetrics } from './metrics.ts';
import {
  claimDueEvents,
  fanOutQueuedStatuses,
  hostsWithPendingEvents,
  recordAttempts,
  releaseClaims,
  type AttemptOutcome,
  type AttemptRecord,
  type ClaimedEvent,
  type FanOutClaim,
} from './queue-repository.ts';
import { nextAttemptAt } from './retry-schedule.ts';
import { ownerOf, webhookSecrets } from './secrets.ts';
import { signingKeyOf } from './signing.ts';
import { createDeliveryAgent } from './ssrf-guard.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

export type DispatcherSettings = Pick<
  Settings,
  | 'webhookAllowPrivateNetworks'
  | 'webhookTimeoutMs'
  | 'webhookRetrySchedule'
  | 'webhookConcurrency'
  | 'webhookConcurrencyPerHost'
  | 'webhookLogRetentionDays'
>;

export interface DispatcherOptions {
  db: Db;
  dialect: DialectStrategy;
  keyRing: KeyRing;
  settings: DispatcherSettings;
  metrics: StatusEventMetrics;
  log: FastifyBaseLogger;
  /** Jitter source; tests pin it. */
  random?: () => number;
  /**
   * True while the server this dispatcher runs in is saturated by requests: it then claims at
   * most one batch per host per idle check, so that deliveries yield the CPU to the requests.
   */
  serverBusy?: () => boolean;
}

export interface Dispatcher {
  start(): void;
  /** New events were queued: look for due work soon rather than at the next idle check. */
  wake(): void;
  /**
   * Stops claiming and gives the rows not started back to the queue; lets the deliveries in
   * flight finish and records their outcomes, for at most STOP_DELIVERIES_AFTER_MS: then those
   * still waiting for an answer are cut, and given back to the queue uncounted.
   */
  stop(): Promise<void>;
}

/**
 * How long a stopping dispatcher waits for the answers of the deliveries in flight. A
 * subscriber that accepts the connection and never answers would otherwise hold a shutdown
 * for a whole WEBHOOK_TIMEOUT_MS (15 s by default), past the 10 s that a stop is allowed
 * (docs/operator-guide.md, "Stopping"); what is cut is sent again by the next dispatcher.
 */
export const STOP_DELIVERIES_AFTER_MS = 5_000;

/** How often a dispatcher looks for due events when nothing woke it (other processes queue them too). */
const IDLE_CHECK_MS = 250;
/** A wake-up waits this long, so that the polls of a burst are claimed together. */
const WAKE_DELAY_MS = 5;
/** How long the list of hosts with pending events is used before it is read again. */
const HOSTS_REFRESH_MS = 100;
/**
 * Rows a process holds per host: this many times its concurrency (being sent, waiting for a
 * slot, or their outcomes not written yet), so that claims come in batches rather than one per
 * finished delivery.
 */
const HOST_BACKLOG_FACTOR = 4;
/** OKMs whose queued status one fan-out passes on to their subscriptions (see fanOutQueuedStatuses). */
const FAN_OUT_BATCH = 500;
/**
 * Rows a process holds that its fan-outs claimed (beside the claims of due rows, which keep
 * their own limits): a host that answers (a free slot, or an answer within ANSWERING_MS) may
 * take any number of them; any other host, its usual share.
 */
const FAN_OUT_ROOM = 2 * FAN_OUT_BATCH;
const ANSWERING_MS = 1_000;
/** A claim outlives the longest wait and attempt by this much before another dispatcher may take the row. */
const CLAIM_MARGIN_MS = 15_000;
/**
 * Outcomes are written once this many have gathered, or this long after the first: a write
 * costs about as much for one row as for dozens (a transaction, a commit), and on SQLite the
 * writes block the event loop, so without a wait each batch held only the few attempts that
 * finished in one turn of it (9 rows on average at 20 000 events). A sent row no longer needs
 * its host while it waits, so the wait holds up no delivery.
 */
const OUTCOME_BATCH = 128;
const OUTCOME_WAIT_MS = 10;
/** Secrets are re-read this often, so a rotation by the CLI reaches running processes. */
const SECRET_CACHE_MS = 30_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

/** A claimed row of either queue: a status event or a fleet-event delivery. */
type Delivery = ClaimedEvent | ClaimedFleetDelivery;

/** The earliest due time of each host over both queues. */
function mergeHosts(...lists: { host: string; firstDueAt: number }[][]): { host: string; firstDueAt: number }[] {
  const merged = new Map<string, number>();
  for (const { host, firstDueAt } of lists.flat()) merged.set(host, Math.min(firstDueAt, merged.get(host) ?? Infinity));
  return [...merged].map(([host, firstDueAt]) => ({ host, firstDueAt }));
}

/** The rows of one destination host that this process holds. */
interface HostLane {
  /** Being sent. */
  sending: number;
  /** Sent, the outcome not written yet. */
  recording: number;
  waiting: Delivery[];
  /** When the host last answered (or the lane was made). */
  answeredAt: number;
}

const newLane = (now: number): HostLane => ({ sending: 0, recording: 0, waiting: [], answeredAt: now });

/**
 * Delivers queued status events and fleet events (SPEC §6, §14) alike, and runs the overdue
 * sweep that emits okm.overdue: claims due rows in batches into one lane per destination
 * host, POSTs them (at most webhookConcurrency at once, at most webhookConcurrencyPerHost per
 * host, so a hanging host holds only its own lane), and records the outcomes in batches. Any
 * number of dispatchers may share one database.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { db, dialect, keyRing, settings, metrics, log } = options;
  const random = options.random ?? Math.random;
  const serverBusy = options.serverBusy ?? (() => false);
  const agent: Agent = createDeliveryAgent({
    allowPrivateNetworks: settings.webhookAllowPrivateNetworks,
    connectionsPerHost: settings.webhookConcurrencyPerHost,
    timeoutMs: settings.webhookTimeoutMs,
  });
  const deadlines = new DeadlineQueue(settings.webhookTimeoutMs);

  const perHost = settings.webhookConcurrencyPerHost;
  const maxHeldPerHost = perHost * HOST_BACKLOG_FACTOR;
  const maxHeld = settings.webhookConcurrency * HOST_BACKLOG_FACTOR;
  let stopping = false;
  let pumping = false;
  let pumpScheduled = false;
  let mayHaveDueWork = true;
  /** The last fan-out took all it was allowed: more OKMs may be waiting for theirs. */
  let mayHaveMoreToFanOut = false;
  /** Hosts with pending events and when each has one due; read every HOSTS_REFRESH_MS. */
  let hosts: { host: string; firstDueAt: number }[] = [];
  let hostsReadAt = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  const lanes = new Map<string, HostLane>();
  /** Deliveries started and not finished (sent and outcome written). */
  const unfinished = new Set<Promise<void>>();
  /** Rows being sent, over all hosts. */
  let sending = 0;
  /** Claimed rows not finished yet: waiting in a lane, being sent, or their outcome not written. */
  let held = 0;
  /** Claimed rows that a fan-out took, not finished yet: counted against FAN_OUT_ROOM, not in `held`. */
  const fannedOut = new Set<Delivery>();
  const fanOutRoom = () => FAN_OUT_ROOM - fannedOut.size;
  /** Each claimed row's token, for recording its outcome or releasing it. */
  const tokens = new Map<Delivery, string>();
  let outcomes: AttemptRecord<Delivery>[] = [];
  let recording: Promise<void> = Promise.resolve();
  /** Ends the wait of the next outcome batch (see OUTCOME_WAIT_MS). */
  let writeOutcomesNow: (() => void) | undefined;
  const secretCache = new Map<string, { keys: Promise<Buffer[]>; until: number }>();
  const outageLog = createOutageLog(log);
  /** Set when a stop cut the deliveries still in flight (the agent destroyed): see STOP_DELIVERIES_AFTER_MS. */
  let cut = false;
  /** Rows whose attempt the cut ended, each with its claim's token: released, not recorded. */
  const cutRows = new Map<Delivery, string>();

  /**
   * Logs a failed database step. While the database is unavailable each pass fails the same
   * way (every IDLE_CHECK_MS until it is back): one warning per interval says so.
   */
  function logFailure(level: 'warn' | 'error', error: unknown, what: string, details: Record<string, unknown> = {}): void {
    if (isDatabaseUnavailable(error)) outageLog(what, error);
    else log[level]({ err: error, ...details }, what);
  }

  function signingKeys(customerId: number | null, now: number): Promise<Buffer[]> {
    const owner = ownerOf(customerId);
    const cached = secretCache.get(owner);
    if (cached && cached.until > now) return cached.keys;
    const keys = webhookSecrets(db, keyRing, owner, now).then(({ current, previous }) =>
      [current, previous?.secret].filter((secret) => secret !== undefined).map(signingKeyOf),
    );
    secretCache.set(owner, { keys, until: now + SECRET_CACHE_MS });
    keys.catch(() => secretCache.delete(owner));
    return keys;
  }

  function toEvent(row: Delivery): StatusEvent | WebhookEvent {
    if (row.kind === 'fleet') return row.event;
    return {
      id: row.eventId,
      type: 'okm.status',
      timestamp: new Date(row.lastSyncTime).toISOString(),
      data: {
        serial_number: row.okmSerial,
        last_sync_time: new Date(row.lastSyncTime).toISOString(),
        last_ip: row.lastIp,
        firmware_version: row.firmwareVersion,
      },
    };
  }

  function outcomeOf(row: Delivery, result: AttemptResult, now: number): AttemptOutcome {
    if (result.kind !== 'failed') return result.kind === 'gone' ? { kind: 'gone', statusCode: 410, error: 'HTTP 410: deliveries to this URL stopped' } : result;
    const next = nextAttemptAt(settings.webhookRetrySchedule, row.attempts + 1, now, result.retryAfterMs, random);
    return next === undefined
      ? { kind: 'failed', statusCode: result.statusCode, error: result.error }
      : { kind: 'retrying', statusCode: result.statusCode, error: result.error, nextAttemptAt: next };
  }

  function count(outcome: AttemptOutcome): void {
    if (outcome.kind === 'delivered') metrics.delivered.inc();
    else if (outcome.kind === 'retrying') metrics.retried.inc();
    else metrics.failed.inc({ reason: outcome.kind === 'gone' ? 'gone' : 'attempts' });
  }

  /** Sends one row, calls `sent`, and resolves once its outcome is written (with the others of its batch). */
  async function attempt(row: Delivery, token: string, sent: () => void): Promise<void> {
    let result: AttemptResult;
    try {
      const keys = await signingKeys(row.customerId, Date.now());
      result = await postStatusEvent(agent, row.url, toEvent(row), keys, deadlines, Date.now());
    } catch (error) {
      result = { kind: 'failed', statusCode: null, error: error instanceof Error ? error.message : String(error), retryAfterMs: undefined };
    }
    if (cut && result.kind === 'failed' && result.statusCode === null) {
      // Ended by the stop, not by the subscriber: not an attempt. Its claim is released with
      // the others cut (stop), so that the next dispatcher sends it at once.
      cutRows.set(row, token);
      return;
    }
    sent();
    const attemptedAt = Date.now();
    const outcome = outcomeOf(row, result, attemptedAt);
    count(outcome);
    if (outcome.kind !== 'delivered') log.debug({ event: row.eventId, url: row.url, outcome }, 'webhook event not delivered');
    outcomes.push({ event: row, token, attemptedAt, outcome });
    if (outcomes.length === 1) recording = recording.then(recordOutcomes);
    else if (outcomes.length >= OUTCOME_BATCH) writeOutcomesNow?.();
    await recording;
  }

  /** Writes the outcomes that finished since the last write, in one batch; one batch at a time. */
  async function recordOutcomes(): Promise<void> {
    if (outcomes.length < OUTCOME_BATCH && !stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, OUTCOME_WAIT_MS);
        writeOutcomesNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      writeOutcomesNow = undefined;
    }
    const batch = outcomes;
    outcomes = [];
    try {
      await recordAttempts(db, dialect, batch.filter((record): record is AttemptRecord => record.event.kind === 'status'));
      await recordFleetAttempts(db, dialect, batch.filter((record): record is AttemptRecord<ClaimedFleetDelivery> => record.event.kind === 'fleet'));
    } catch (error) {
      // The claims lapse and the events are attempted again: at least once, never lost.
      logFailure('error', error, 'could not record status event outcomes', { count: batch.length });
    }
  }

  const laneHeld = (lane: HostLane | undefined) => (lane ? lane.sending + lane.recording + lane.waiting.length : 0);
  /** The rows of a lane that still need its host: a sent row waits only for its outcome to be written. */
  const laneBacklog = (lane: HostLane | undefined) => (lane ? lane.sending + lane.waiting.length : 0);
  const isAnswering = (lane: HostLane, now: number) => lane.sending < perHost || now - lane.answeredAt < ANSWERING_MS;

  /**
   * Sends a row. Its host slot is free again once it is sent, while its outcome waits for the
   * next batch write, so that sending and writing overlap; the row counts as held until written.
   */
  function launch(row: Delivery, lane: HostLane): void {
    lane.sending++;
    sending++;
    let isSent = false;
    const sent = () => {
      if (isSent) return;
      isSent = true;
      lane.sending--;
      sending--;
      lane.recording++;
      lane.answeredAt = Date.now();
      startWaiting();
    };
    const delivery = attempt(row, tokens.get(row)!, sent).finally(() => {
      sent();
      unfinished.delete(delivery);
      tokens.delete(row);
      lane.recording--;
      unhold(row);
      if (laneHeld(lane) === 0) lanes.delete(row.host);
      // Refill before the lane runs dry, in batches rather than one claim per delivery; a busy
      // server waits for the idle check instead.
      if ((mayHaveDueWork && laneBacklog(lane) <= maxHeldPerHost / 2) || (mayHaveMoreToFanOut && fanOutRoom() >= FAN_OUT_BATCH / 2)) {
        if (!serverBusy()) schedulePump();
      }
    });
    unfinished.add(delivery);
  }

  /** Starts waiting rows wherever a host slot and a process slot are free. */
  function startWaiting(): void {
    if (stopping) return;
    for (const lane of lanes.values()) {
      while (lane.waiting.length > 0 && lane.sending < perHost && sending < settings.webhookConcurrency) launch(lane.waiting.shift()!, lane);
    }
  }

  function schedulePump(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      void pump();
    });
  }

  /** Puts claimed rows in their host's lane and starts what may start. */
  function take(rows: readonly Delivery[], token: string, now: number, byFanOut = false): void {
    for (const row of rows) {
      let lane = lanes.get(row.host);
      if (!lane) lanes.set(row.host, (lane = newLane(now)));
      tokens.set(row, token);
      lane.waiting.push(row);
      if (byFanOut) fannedOut.add(row);
      else held++;
    }
    startWaiting();
  }

  function unhold(row: Delivery): void {
    if (!fannedOut.delete(row)) held--;
  }

  /**
   * The claims of a fan-out's rows: a host takes rows while its lane has room (a host that
   * answers, any; any other, its usual share) and FAN_OUT_ROOM has room.
   * Each row's claim lasts as long as the rows ahead of it in its lane may take, then its own
   * attempt, and the margin.
   */
  function fanOutClaims(token: string, now: number, hostShare: number): FanOutClaim {
    const taken = new Map<string, number>();
    let room = fanOutRoom();
    return (host) => {
      const lane = lanes.get(host);
      const position = laneBacklog(lane) + (taken.get(host) ?? 0);
      const share = lane === undefined || isAnswering(lane, now) ? FAN_OUT_ROOM : hostShare;
      if (room <= 0 || position >= share) return undefined;
      room--;
      taken.set(host, (taken.get(host) ?? 0) + 1);
      return { token, claimedUntil: now + (Math.floor(position / perHost) + 1) * settings.webhookTimeoutMs + CLAIM_MARGIN_MS };
    };
  }

  /**
   * A host that stopped answering keeps its usual share of waiting rows: the rest (taken by a
   * fan-out while it answered) go back to the queue, for other hosts' deliveries to use the
   * process's room.
   */
  async function trimLanesNotAnswering(now: number): Promise<void> {
    for (const lane of lanes.values()) {
      const excess = laneBacklog(lane) - maxHeldPerHost;
      if (excess <= 0 || isAnswering(lane, now)) continue;
      const returned = lane.waiting.splice(lane.waiting.length - Math.min(excess, lane.waiting.length));
      returned.forEach(unhold);
      await releaseRows(returned);
    }
  }

  /** Gives rows not started (or cut) back to the queue, their claims released; true unless the database was unavailable. */
  async function releaseRows(rows: readonly Delivery[], tokenOf = (row: Delivery) => tokens.get(row)!): Promise<boolean> {
    const byClaim = new Map<string, Delivery[]>();
    for (const row of rows) {
      const key = `${row.kind} ${tokenOf(row)}`;
      byClaim.set(key, [...(byClaim.get(key) ?? []), row]);
      tokens.delete(row);
    }
    for (const [key, claimed] of byClaim) {
      const [kind, token] = key.split(' ') as [Delivery['kind'], string];
      const release = kind === 'status' ? releaseClaims : releaseFleetClaims;
      try {
        await release(db, claimed.map((row) => row.id), token);
      } catch (error) {
        logFailure('warn', error, 'could not release a claim');
        if (isDatabaseUnavailable(error)) return false;
      }
    }
    return true;
  }

  /**
   * Passes the statuses that polls queued on to their subscriptions, taking the rows of hosts
   * with room at once, then claims due events for each host whose lane has room, at most what
   * the lane may hold, and starts them; sleeps until the idle check when nothing more is due.
   * A busy server fans out a lane-full at a time.
   */
  async function pump(): Promise<void> {
    if (pumping || stopping) return;
    pumping = true;
    try {
      const busy = serverBusy();
      const hostShare = busy ? perHost : maxHeldPerHost;
      let now = Date.now();
      await trimLanesNotAnswering(now);
      // At least a lane-full, so that marks keep moving while the process holds all it may.
      const fanOutLimit = busy ? perHost : Math.max(perHost, Math.min(FAN_OUT_BATCH, fanOutRoom()));
      const token = randomUUID();
      let okmsFannedOut = 0;
      let leftUnclaimed = false;
      try {
        const fanOut = await fanOutQueuedStatuses(db, dialect, fanOutLimit, now, fanOutClaims(token, now, hostShare));
        okmsFannedOut = fanOut.fannedOut;
        leftUnclaimed = fanOut.claimed.length < okmsFannedOut;
        take(fanOut.claimed, token, Date.now(), true);
      } catch (error) {
        // The marks stay for the next pass; the rows already pending are still delivered.
        logFailure('error', error, 'could not fan out queued status events');
      }
      mayHaveMoreToFanOut = okmsFannedOut === fanOutLimit;
      now = Date.now();
      if (leftUnclaimed || now - hostsReadAt >= HOSTS_REFRESH_MS) {
        hosts = mergeHosts(await hostsWithPendingEvents(db), await hostsWithPendingEvents(db, 'fleet_event_deliveries'));
        hostsReadAt = now = Date.now();
      }
      mayHaveDueWork = false;
      for (const entry of hosts) {
        const limit = Math.min(hostShare - laneBacklog(lanes.get(entry.host)), maxHeld - held);
        if (stopping || entry.firstDueAt > now || limit <= 0) {
          // A full lane refills as its deliveries finish.
          mayHaveDueWork ||= limit <= 0 && entry.firstDueAt <= now;
          continue;
        }
        const claim = { host: entry.host, now, limit, token, claimedUntil: now + HOST_BACKLOG_FACTOR * settings.webhookTimeoutMs + CLAIM_MARGIN_MS };
        const claimed: Delivery[] = await claimDueEvents(db, dialect, claim);
        if (claimed.length < limit) claimed.push(...(await claimDueFleetDeliveries(db, dialect, { ...claim, limit: limit - claimed.length })));
        take(claimed, token, now);
        // Fewer than asked: nothing else of this host is due until the list is read again.
        if (claimed.length < limit) entry.firstDueAt = Infinity;
        else mayHaveDueWork = true;
      }
    } catch (error) {
      logFailure('error', error, 'could not claim status events');
      mayHaveDueWork = false;
    } finally {
      pumping = false;
      // More to fan out: at once while there is room for it, else as deliveries finish (launch).
      if (mayHaveMoreToFanOut && !stopping && !serverBusy() && fanOutRoom() >= FAN_OUT_BATCH / 2) schedulePump();
      // Other processes queue events too, and retries fall due: look again after a while in any case.
      else if (!stopping) {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => {
          hostsReadAt = 0;
          void pump();
        }, IDLE_CHECK_MS);
      }
    }
  }

  async function prune(): Promise<void> {
    try {
      const before = Date.now() - settings.webhookLogRetentionDays * DAY_MS;
      await pruneDeliveryFailures(db, before);
      await pruneFleetDeliveries(db, before);
    } catch (error) {
      logFailure('warn', error, 'could not prune the status event delivery log');
    }
  }

  return {
    start() {
      stopping = false;
      void pump();
      void prune();
      pruneTimer = setInterval(() => void prune(), PRUNE_EVERY_MS);
      pruneTimer.unref();
    },
    wake() {
      if (stopping || wakeTimer || serverBusy()) return;
      wakeTimer = setTimeout(() => {
        wakeTimer = undefined;
        clearTimeout(idleTimer);
        void pump();
      }, WAKE_DELAY_MS);
    },
    async stop() {
      stopping = true;
      clearTimeout(idleTimer);
      clearTimeout(wakeTimer);
      clearInterval(pruneTimer);
      // Destroying the agent ends every exchange in flight at once, connecting, sending or
      // waiting for an answer; one whose status is in (its body being read) keeps that status.
      const cutTimer = setTimeout(() => {
        cut = true;
        if (unfinished.size > 0) log.warn({ deliveries: sending }, 'deliveries still waiting for an answer at the stop deadline; cutting them, to be sent again');
        agent.destroy().catch(() => {});
      }, STOP_DELIVERIES_AFTER_MS);
      let databaseAnswered = true;
      try {
        while (pumping) await new Promise((resolve) => setImmediate(resolve));
        // Rows not started yet go back to the queue for the next dispatcher. Without a database
        // their claims lapse instead: trying each row would hold the shutdown a timeout per row.
        for (const lane of lanes.values()) {
          const waiting = lane.waiting.splice(0);
          waiting.forEach(unhold);
          if (!(await releaseRows(waiting))) {
            databaseAnswered = false;
            break;
          }
        }
        await Promise.all(unfinished);
      } finally {
        clearTimeout(cutTimer);
      }
      // After the cut, one more try on a database that did not answer could cost a connection
      // timeout on top of the cut's wait, past the stop's 10 s: those claims lapse too.
      if (cutRows.size > 0 && databaseAnswered) await releaseRows([...cutRows.keys()], (row) => cutRows.get(row)!);
      await (cut ? agent.destroy() : agent.close());
    },
  };
}
