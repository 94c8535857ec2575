import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import type { Settings } from '../config/settings.ts';
import { createOutageLog, isDatabaseUnavailable } from '../db/connection-errors.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { eventBodyOf, outcomeOf, type ClaimedDelivery } from './claimed-delivery.ts';
import { DeadlineQueue } from './deadline-queue.ts';
import { pruneDeliveryFailures } from './delivery-log-repository.ts';
import { createDeliveryOutcomeBatcher } from './delivery-outcome-batcher.ts';
import { postStatusEvent, type AttemptResult } from './delivery.ts';
import { claimDueFleetDeliveries, pruneFleetDeliveries, releaseFleetClaims } from './fleet-deliveries-repository.ts';
import { HOST_BACKLOG_FACTOR, HostLanes, type HeldRow } from './host-lanes.ts';
import type { StatusEventMetrics } from './metrics.ts';
import { claimDueEvents, fanOutQueuedStatuses, hostsWithPendingEvents, releaseClaims, type AttemptOutcome } from './queue-repository.ts';
import { createSigningKeyCache } from './signing-key-cache.ts';
import { createDeliveryAgent } from './ssrf-guard.ts';

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
/** OKMs whose queued status one fan-out passes on to their subscriptions (see fanOutQueuedStatuses). */
const FAN_OUT_BATCH = 500;
/**
 * Rows a process holds that its fan-outs claimed (beside the claims of due rows, which keep
 * their own limits): a host that answers (a free slot, or an answer within ANSWERING_MS) may
 * take any number of them; any other host, its usual share.
 */
const FAN_OUT_ROOM = 2 * FAN_OUT_BATCH;
/** A claim outlives the longest wait and attempt by this much before another dispatcher may take the row. */
const CLAIM_MARGIN_MS = 15_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

/** The earliest due time of each host over both queues. */
function mergeHosts(...lists: { host: string; firstDueAt: number }[][]): { host: string; firstDueAt: number }[] {
  const merged = new Map<string, number>();
  for (const { host, firstDueAt } of lists.flat()) merged.set(host, Math.min(firstDueAt, merged.get(host) ?? Infinity));
  return [...merged].map(([host, firstDueAt]) => ({ host, firstDueAt }));
}

/**
 * Delivers queued status events and fleet events (contract §6, §14) alike: fans the statuses that
 * polls queued out to their subscriptions, claims due rows in batches into one lane per
 * destination host (host-lanes.ts), POSTs them (at most webhookConcurrency at once, at most
 * webhookConcurrencyPerHost per host, so a hanging host holds only its own lane), records the
 * outcomes in batches (delivery-outcome-batcher.ts), and prunes the delivery logs. Any number
 * of dispatchers may share one database. What falls overdue is found by the fleet pass
 * (src/fleet/), not here.
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
  const lanes = new HostLanes<ClaimedDelivery>({ perHost, concurrency: settings.webhookConcurrency, fanOutRoom: FAN_OUT_ROOM });
  const signingKeys = createSigningKeyCache(db, keyRing);
  const outcomes = createDeliveryOutcomeBatcher({
    db,
    dialect,
    stopping: () => stopping,
    databaseGone: () => databaseGoneAtStop,
    onWriteFailure: (error, count) => {
      if (error === undefined) log.warn({ count }, 'status event outcomes not written at the stop: the database did not answer; their claims lapse');
      else {
        noteStopFailure(error);
        logFailure('error', error, 'could not record status event outcomes', { count });
      }
    },
  });
  const outageLog = createOutageLog(log);

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
  /** Deliveries started and not finished (sent and outcome written). */
  const unfinished = new Set<Promise<void>>();
  /** Set when a stop cut the deliveries still in flight (the agent destroyed): see STOP_DELIVERIES_AFTER_MS. */
  let cut = false;
  /** Rows whose attempt the cut ended, each with its claim's token: released, not recorded. */
  const cutRows: HeldRow<ClaimedDelivery>[] = [];
  /**
   * Set when the database did not answer a step of the stop. The stop then tries it no more:
   * each try could cost a connection timeout (5 s), one after another past the stop's 10 s.
   * What it still held (rows not started, outcomes not written) lapses with its claims.
   */
  let databaseGoneAtStop = false;

  function noteStopFailure(error: unknown): void {
    if (stopping && isDatabaseUnavailable(error)) databaseGoneAtStop = true;
  }

  /**
   * Logs a failed database step. While the database is unavailable each pass fails the same
   * way (every IDLE_CHECK_MS until it is back): one warning per interval says so.
   */
  function logFailure(level: 'warn' | 'error', error: unknown, what: string, details: Record<string, unknown> = {}): void {
    if (isDatabaseUnavailable(error)) outageLog(what, error);
    else log[level]({ err: error, ...details }, what);
  }

  function count(outcome: AttemptOutcome): void {
    if (outcome.kind === 'delivered') metrics.delivered.inc();
    else if (outcome.kind === 'retrying') metrics.retried.inc();
    else metrics.failed.inc({ reason: outcome.kind === 'gone' ? 'gone' : 'attempts' });
  }

  /** Sends one row, calls `sent`, and resolves once its outcome is written (with the others of its batch). */
  async function attempt({ row, token }: HeldRow<ClaimedDelivery>, sent: () => void): Promise<void> {
    let result: AttemptResult;
    try {
      const keys = await signingKeys(row.customerId, Date.now());
      result = await postStatusEvent(agent, row.url, eventBodyOf(row), keys, deadlines, Date.now());
    } catch (error) {
      result = { kind: 'failed', statusCode: null, error: error instanceof Error ? error.message : String(error), retryAfterMs: undefined };
    }
    if (cut && result.kind === 'failed' && result.statusCode === null) {
      // Ended by the stop, not by the subscriber: not an attempt. Its claim is released with
      // the others cut (stop), so that the next dispatcher sends it at once.
      cutRows.push({ row, token });
      return;
    }
    sent();
    const attemptedAt = Date.now();
    const outcome = outcomeOf(row, result, attemptedAt, settings.webhookRetrySchedule, random);
    count(outcome);
    if (outcome.kind !== 'delivered') log.debug({ event: row.eventId, url: row.url, outcome }, 'webhook event not delivered');
    await outcomes.record({ event: row, token, attemptedAt, outcome });
  }

  /**
   * Sends a row. Its host slot is free again once it is sent, while its outcome waits for the
   * next batch write, so that sending and writing overlap; the row counts as held until written.
   */
  function launch(held: HeldRow<ClaimedDelivery>): void {
    const { row } = held;
    const sent = () => {
      if (lanes.sent(row, Date.now())) startWaiting();
    };
    const delivery = attempt(held, sent).finally(() => {
      sent();
      unfinished.delete(delivery);
      lanes.finished(row, Date.now());
      // Refill before the lane runs dry, in batches rather than one claim per delivery; a busy
      // server waits for the idle check instead.
      if ((mayHaveDueWork && lanes.backlog(row.host) <= lanes.maxHeldPerHost / 2) || (mayHaveMoreToFanOut && lanes.fanOutRoom() >= FAN_OUT_BATCH / 2)) {
        if (!serverBusy()) schedulePump();
      }
    });
    unfinished.add(delivery);
  }

  /** Starts waiting rows wherever a host slot and a process slot are free. */
  function startWaiting(): void {
    if (stopping) return;
    for (const held of lanes.startable()) launch(held);
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
  function take(rows: readonly ClaimedDelivery[], token: string, now: number, byFanOut = false): void {
    lanes.take(rows, token, now, byFanOut);
    startWaiting();
  }

  /** Gives rows not started (or cut) back to the queue, their claims released; true unless the database was unavailable. */
  async function releaseRows(rows: readonly HeldRow<ClaimedDelivery>[]): Promise<boolean> {
    const byClaim = new Map<string, ClaimedDelivery[]>();
    for (const { row, token } of rows) {
      const key = `${row.kind} ${token}`;
      byClaim.set(key, [...(byClaim.get(key) ?? []), row]);
    }
    for (const [key, claimed] of byClaim) {
      const [kind, token] = key.split(' ') as [ClaimedDelivery['kind'], string];
      const release = kind === 'status' ? releaseClaims : releaseFleetClaims;
      try {
        await release(db, claimed.map((row) => row.id), token);
      } catch (error) {
        noteStopFailure(error);
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
      const hostShare = busy ? perHost : lanes.maxHeldPerHost;
      let now = Date.now();
      // A host that stopped answering gives back what a fan-out took beyond its usual share.
      for (const host of lanes.hosts()) {
        const returned = lanes.trimIfNotAnswering(host, now);
        if (returned.length > 0) await releaseRows(returned);
      }
      // At least a lane-full, so that marks keep moving while the process holds all it may.
      const fanOutLimit = busy ? perHost : Math.max(perHost, Math.min(FAN_OUT_BATCH, lanes.fanOutRoom()));
      const token = randomUUID();
      let okmsFannedOut = 0;
      let leftUnclaimed = false;
      try {
        const claims = lanes.fanOutClaims(token, now, hostShare, { attemptMs: settings.webhookTimeoutMs, marginMs: CLAIM_MARGIN_MS });
        const fanOut = await fanOutQueuedStatuses(db, dialect, fanOutLimit, now, claims);
        okmsFannedOut = fanOut.fannedOut;
        leftUnclaimed = fanOut.claimed.length < okmsFannedOut;
        take(fanOut.claimed, token, Date.now(), true);
      } catch (error) {
        // The marks stay for the next pass; the rows already pending are still delivered.
        noteStopFailure(error);
        logFailure('error', error, 'could not fan out queued status events');
      }
      mayHaveMoreToFanOut = okmsFannedOut === fanOutLimit;
      // A stop claims nothing more: it would only give it back, a database step at a time.
      if (stopping) return;
      now = Date.now();
      if (leftUnclaimed || now - hostsReadAt >= HOSTS_REFRESH_MS) {
        hosts = mergeHosts(await hostsWithPendingEvents(db), await hostsWithPendingEvents(db, 'fleet_event_deliveries'));
        hostsReadAt = now = Date.now();
      }
      mayHaveDueWork = false;
      for (const entry of hosts) {
        const limit = lanes.claimRoom(entry.host, hostShare);
        if (stopping || entry.firstDueAt > now || limit <= 0) {
          // A full lane refills as its deliveries finish.
          mayHaveDueWork ||= limit <= 0 && entry.firstDueAt <= now;
          continue;
        }
        const claim = { host: entry.host, now, limit, token, claimedUntil: now + HOST_BACKLOG_FACTOR * settings.webhookTimeoutMs + CLAIM_MARGIN_MS };
        const claimed: ClaimedDelivery[] = await claimDueEvents(db, dialect, claim);
        if (claimed.length < limit) claimed.push(...(await claimDueFleetDeliveries(db, dialect, { ...claim, limit: limit - claimed.length })));
        take(claimed, token, now);
        // Fewer than asked: nothing else of this host is due until the list is read again.
        if (claimed.length < limit) entry.firstDueAt = Infinity;
        else mayHaveDueWork = true;
      }
    } catch (error) {
      noteStopFailure(error);
      logFailure('error', error, 'could not claim status events');
      mayHaveDueWork = false;
    } finally {
      pumping = false;
      // More to fan out: at once while there is room for it, else as deliveries finish (launch).
      if (mayHaveMoreToFanOut && !stopping && !serverBusy() && lanes.fanOutRoom() >= FAN_OUT_BATCH / 2) schedulePump();
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
        if (unfinished.size > 0) log.warn({ deliveries: lanes.sending }, 'deliveries still waiting for an answer at the stop deadline; cutting them, to be sent again');
        agent.destroy().catch(() => {});
      }, STOP_DELIVERIES_AFTER_MS);
      try {
        while (pumping) await new Promise((resolve) => setImmediate(resolve));
        // Rows not started yet go back to the queue for the next dispatcher. Without a database
        // (the pump's last step may have found it so) their claims lapse instead: trying each
        // row would hold the shutdown a timeout per row.
        for (const host of lanes.hosts()) {
          if (databaseGoneAtStop || !(await releaseRows(lanes.takeWaiting(host)))) break;
        }
        await Promise.all(unfinished);
      } finally {
        clearTimeout(cutTimer);
      }
      // After the cut, one more try on a database that did not answer could cost a connection
      // timeout on top of the cut's wait, past the stop's 10 s: those claims lapse too.
      if (cutRows.length > 0 && !databaseGoneAtStop) await releaseRows(cutRows);
      await (cut ? agent.destroy() : agent.close());
    },
  };
}
