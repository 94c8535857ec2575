import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { postStatusEvent, type AttemptResult, type StatusEvent } from './delivery.ts';
import type { StatusEventMetrics } from './metrics.ts';
import {
  claimDueEvents,
  pruneDeliveryFailures,
  recordAttempts,
  releaseClaims,
  type AttemptOutcome,
  type AttemptRecord,
  type ClaimedEvent,
} from './queue-repository.ts';
import { nextAttemptAt } from './retry-schedule.ts';
import { ownerOf, webhookSecrets } from './secrets.ts';
import { signingKeyOf } from './signing.ts';
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
  masterKey: Buffer;
  settings: DispatcherSettings;
  metrics: StatusEventMetrics;
  log: FastifyBaseLogger;
  /** Jitter source; tests pin it. */
  random?: () => number;
}

export interface Dispatcher {
  start(): void;
  /** New events were queued: look for due work soon rather than at the next idle check. */
  wake(): void;
  /** Stops claiming, lets the deliveries in flight finish and records their outcomes. */
  stop(): Promise<void>;
}

/** How often an idle dispatcher looks for due events (other processes queue them too). */
const IDLE_CHECK_MS = 250;
/** A wake-up waits this long, so that the polls of a burst are claimed together. */
const WAKE_DELAY_MS = 5;
const MAX_CLAIM = 200;
/** A claim outlives the longest attempt by this much before another dispatcher may take the row. */
const CLAIM_MARGIN_MS = 15_000;
/** Secrets are re-read this often, so a rotation by the CLI reaches running processes. */
const SECRET_CACHE_MS = 30_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

/**
 * Delivers queued status events: claims due rows in batches, POSTs each (at most
 * webhookConcurrency at once, at most webhookConcurrencyPerHost per destination host), and
 * records the outcomes in batches. Any number of dispatchers may share one database.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { db, dialect, masterKey, settings, metrics, log } = options;
  const random = options.random ?? Math.random;
  const agent: Agent = createDeliveryAgent({
    allowPrivateNetworks: settings.webhookAllowPrivateNetworks,
    connectionsPerHost: settings.webhookConcurrencyPerHost,
    timeoutMs: settings.webhookTimeoutMs,
  });

  let stopping = false;
  let pumping = false;
  let mayHaveDueWork = true;
  let idleTimer: NodeJS.Timeout | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  const inFlight = new Set<Promise<void>>();
  const inFlightByHost = new Map<string, number>();
  let outcomes: AttemptRecord[] = [];
  let recording: Promise<void> = Promise.resolve();
  const secretCache = new Map<string, { keys: Promise<Buffer[]>; until: number }>();

  function signingKeys(customerId: number | null, now: number): Promise<Buffer[]> {
    const owner = ownerOf(customerId);
    const cached = secretCache.get(owner);
    if (cached && cached.until > now) return cached.keys;
    const keys = webhookSecrets(db, masterKey, owner, now).then(({ current, previous }) =>
      [current, previous?.secret].filter((secret) => secret !== undefined).map(signingKeyOf),
    );
    secretCache.set(owner, { keys, until: now + SECRET_CACHE_MS });
    keys.catch(() => secretCache.delete(owner));
    return keys;
  }

  function toEvent(row: ClaimedEvent): StatusEvent {
    return {
      id: row.eventId,
      type: 'okm.status',
      timestamp: new Date(row.queuedAt).toISOString(),
      data: {
        serial_number: row.okmSerial,
        last_sync_time: new Date(row.lastSyncTime).toISOString(),
        last_ip: row.lastIp,
        firmware_version: row.firmwareVersion,
      },
    };
  }

  function outcomeOf(row: ClaimedEvent, result: AttemptResult, now: number): AttemptOutcome {
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

  async function attempt(row: ClaimedEvent, token: string): Promise<void> {
    let result: AttemptResult;
    try {
      const keys = await signingKeys(row.customerId, Date.now());
      result = await postStatusEvent(agent, row.url, toEvent(row), keys, settings.webhookTimeoutMs, Date.now());
    } catch (error) {
      result = { kind: 'failed', statusCode: null, error: error instanceof Error ? error.message : String(error), retryAfterMs: undefined };
    }
    const attemptedAt = Date.now();
    const outcome = outcomeOf(row, result, attemptedAt);
    count(outcome);
    if (outcome.kind !== 'delivered') log.debug({ okm: row.okmSerial, url: row.url, outcome }, 'status event not delivered');
    outcomes.push({ event: row, token, attemptedAt, outcome });
    scheduleRecording();
  }

  /** Outcomes are written in batches: one transaction for all that finished since the last write. */
  function scheduleRecording(): void {
    if (outcomes.length !== 1) return;
    recording = recording.then(
      () =>
        new Promise<void>((resolve) =>
          setImmediate(async () => {
            const batch = outcomes;
            outcomes = [];
            try {
              await recordAttempts(db, batch);
            } catch (error) {
              // The claims lapse and the events are attempted again: at least once, never lost.
              log.error({ err: error, count: batch.length }, 'could not record status event outcomes');
            }
            resolve();
          }),
        ),
    );
  }

  function start(row: ClaimedEvent, token: string): void {
    inFlightByHost.set(row.host, (inFlightByHost.get(row.host) ?? 0) + 1);
    const delivery = attempt(row, token).finally(() => {
      inFlight.delete(delivery);
      const left = inFlightByHost.get(row.host)! - 1;
      if (left === 0) inFlightByHost.delete(row.host);
      else inFlightByHost.set(row.host, left);
      if (mayHaveDueWork) void pump();
    });
    inFlight.add(delivery);
  }

  const hostIsFull = (host: string) => (inFlightByHost.get(host) ?? 0) >= settings.webhookConcurrencyPerHost;

  /** Claims and starts due events while there is room; sleeps until the idle check when none are due. */
  async function pump(): Promise<void> {
    if (pumping || stopping) return;
    pumping = true;
    try {
      while (!stopping) {
        const room = settings.webhookConcurrency - inFlight.size;
        if (room <= 0) return;
        const now = Date.now();
        const token = randomUUID();
        const limit = Math.min(room, MAX_CLAIM);
        const claimed = await claimDueEvents(db, dialect, {
          now,
          limit,
          token,
          claimedUntil: now + settings.webhookTimeoutMs + CLAIM_MARGIN_MS,
          excludedHosts: [...inFlightByHost.keys()].filter(hostIsFull),
        });
        const busy = claimed.filter((row) => {
          if (hostIsFull(row.host)) return true;
          start(row, token);
          return false;
        });
        await releaseClaims(db, busy.map((row) => row.id), token);
        mayHaveDueWork = claimed.length === limit;
        if (!mayHaveDueWork) return;
      }
    } catch (error) {
      log.error({ err: error }, 'could not claim status events');
      mayHaveDueWork = false;
    } finally {
      pumping = false;
      if (!stopping && !mayHaveDueWork) {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => {
          mayHaveDueWork = true;
          void pump();
        }, IDLE_CHECK_MS);
      }
    }
  }

  async function prune(): Promise<void> {
    try {
      await pruneDeliveryFailures(db, Date.now() - settings.webhookLogRetentionDays * DAY_MS);
    } catch (error) {
      log.warn({ err: error }, 'could not prune the status event delivery log');
    }
  }

  return {
    start() {
      stopping = false;
      mayHaveDueWork = true;
      void pump();
      void prune();
      pruneTimer = setInterval(() => void prune(), PRUNE_EVERY_MS);
      pruneTimer.unref();
    },
    wake() {
      if (stopping || wakeTimer) return;
      wakeTimer = setTimeout(() => {
        wakeTimer = undefined;
        mayHaveDueWork = true;
        clearTimeout(idleTimer);
        void pump();
      }, WAKE_DELAY_MS);
    },
    async stop() {
      stopping = true;
      clearTimeout(idleTimer);
      clearTimeout(wakeTimer);
      clearInterval(pruneTimer);
      while (pumping) await new Promise((resolve) => setImmediate(resolve));
      await Promise.all(inFlight);
      await recording;
      await agent.close();
    },
  };
}
