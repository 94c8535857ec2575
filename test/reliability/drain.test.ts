import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { Client } from 'undici';
import { issueToken } from '../../src/auth/tokens.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { aclUser } from '../acl/helpers.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { serveProcess } from '../helpers/server-process.ts';

const CUSTOMER = 'drain';
/** The promise of the operator guide ("Stopping"): the process is gone within 10 s of SIGTERM. */
const STOP_LIMIT_MS = 10_000;
/** Connections that always have a request in flight. */
const BUSY_CONNECTIONS = 12;
/**
 * Keep-alive connections that each send a poll just before the signal: the server is still
 * working through them when the signal comes, and the requests sent right after it wait unread
 * in their sockets meanwhile.
 */
const BURST_CONNECTIONS = 96;
/** Keep-alive connections that sit idle until the signal, then send on it. */
const WOKEN_CONNECTIONS = 24;
/**
 * The woken connections start one after the other, this far apart, from the tick of the signal
 * on, and each sends again this soon after an answer that leaves its connection open.
 */
const WOKEN_STEP_MS = 2;
/** Keep-alive connections that stay silent after the signal: the server has to close them itself. */
const SILENT_CONNECTIONS = 4;
/** No request is sent later than this after the signal: well inside the server's linger, so that none races its end. */
const SEND_WINDOW_MS = 150;

type Family = 'poll' | 'acl';

interface Outcome {
  connection: string;
  family: Family;
  /** The polled serial or the ACL's id: what is stored iff the server did the write. */
  key: string;
  /** When the request was handed to its connection (performance.now()). */
  sentAt: number;
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: string;
  /** Why there was no answer (undici's error code). */
  error?: string;
}

/** A connection the server refused never carried the request: its client knows nothing was done. */
const NEVER_SENT = 'ECONNREFUSED';

/**
 * One keep-alive connection: an undici Client holds exactly one, and never sends again a request
 * it has written, so a reset shows here as an error. It stops sending once an answer says
 * `Connection: close` or the connection is gone, as a client that goes elsewhere would.
 */
class KeepAliveConnection {
  readonly outcomes: Outcome[] = [];
  private ended = false;
  private readonly client: Client;

  constructor(
    readonly name: string,
    base: string,
    private readonly aclAuthorization: string,
  ) {
    this.client = new Client(base, { pipelining: 1 });
    this.client.on('disconnect', () => (this.ended = true));
  }

  /** Sends one request and waits for its answer; false once this connection is to send no more. */
  async send(family: Family, sequence: number): Promise<boolean> {
    if (this.ended) return false;
    const key = family === 'poll' ? `DRAIN-${this.name}-${sequence}` : randomUUID();
    const outcome: Outcome = { connection: this.name, family, key, sentAt: performance.now() };
    this.outcomes.push(outcome);
    try {
      const response = await this.client.request(
        family === 'poll'
          ? { method: 'GET', path: `/api/v1/config/${key}?installCode=${10_000_000 + sequence}&kasFirmware=1.0.0` }
          : {
              method: 'POST',
              path: '/api/v1/acls',
              headers: { authorization: this.aclAuthorization, 'content-type': 'application/json' },
              body: JSON.stringify({ id: key, customer: CUSTOMER, users: [aclUser(sequence % 1000, [17])], locks: [`DOOR-${sequence}`], user_data: { sequence } }),
            },
      );
      outcome.status = response.statusCode;
      outcome.headers = response.headers;
      outcome.body = await response.body.text();
      if (response.headers.connection === 'close') this.ended = true;
    } catch (error) {
      outcome.error = (error as { code?: string }).code ?? String(error);
      this.ended = true;
    }
    return !this.ended;
  }

  close(): Promise<void> {
    return this.client.destroy();
  }
}

/** Why an outcome is not one the drain promises (a 2xx, or the documented 503 in the `{error_code, error_msg}` shape), or undefined. */
function brokenPromise(outcome: Outcome): string | undefined {
  if (outcome.error !== undefined) return outcome.error === NEVER_SENT ? undefined : `no answer: ${outcome.error}`;
  const status = outcome.status!;
  if (status >= 200 && status < 300) return undefined;
  if (status !== 503) return `status ${status}: ${outcome.body}`;
  const body = JSON.parse(outcome.body!) as Record<string, unknown>;
  if (JSON.stringify(Object.keys(body).sort()) !== '["error_code","error_msg"]' || body.error_code !== 'SHUTTING_DOWN') return `503 ${outcome.body}`;
  if (outcome.headers!['content-type'] !== 'application/json; charset=utf-8') return `503 as ${String(outcome.headers!['content-type'])}`;
  if (!/^[1-9][0-9]*$/.test(String(outcome.headers!['retry-after']))) return `503 without Retry-After: ${JSON.stringify(outcome.headers)}`;
  if (outcome.headers!.connection !== 'close') return `503 without Connection: close: ${JSON.stringify(outcome.headers)}`;
  return undefined;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (outcomes: Outcome[], which: (outcome: Outcome) => boolean) => outcomes.filter(which).length;

/**
 * `keyfleet serve` under load from keep-alive clients, polls and ACL writes: SIGTERM comes while
 * the server works through a burst, and requests go on being sent on the open connections
 * after it. Every request must get an answer; what was acknowledged must be stored.
 */
async function drainUnderKeepAliveLoad(store: TestStore, env: Record<string, string>, label: string, diagnostic: (message: string) => void): Promise<void> {
  const server = serveProcess({
    ...store.database.env,
    // The load is far above any device's or integration's rate: limits would only measure themselves.
    RATE_LIMIT_DEVICE_PER_MINUTE: '0',
    RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0',
    RATE_LIMIT_API_PER_MINUTE: '0',
    ...env,
  });
  const connections: KeepAliveConnection[] = [];
  try {
    const base = await server.listening;
    await createCustomer(store.db, CUSTOMER);
    const { token } = await issueToken(store.db, store.keyRing, store.settings, { scopes: ['acl:create', 'acl:read'], customer: CUSTOMER, ttlSeconds: 3600 });
    const connection = (name: string) => {
      const made = new KeepAliveConnection(name, base, `Bearer ${token}`);
      connections.push(made);
      return made;
    };
    const busy = Array.from({ length: BUSY_CONNECTIONS }, (_, index) => connection(`busy-${index}`));
    const bursting = Array.from({ length: BURST_CONNECTIONS }, (_, index) => connection(`burst-${index}`));
    const woken = Array.from({ length: WOKEN_CONNECTIONS }, (_, index) => connection(`woken-${index}`));
    const silent = Array.from({ length: SILENT_CONNECTIONS }, (_, index) => connection(`silent-${index}`));
    let sequence = 0;
    const familyOf = (index: number): Family => (index % 3 === 0 ? 'acl' : 'poll');
    let signalledAt = Number.POSITIVE_INFINITY;
    const withinSendWindow = () => performance.now() - signalledAt < SEND_WINDOW_MS;

    // Each of these connections is open and used once: its next request reuses it.
    await Promise.all([...bursting, ...woken, ...silent].map(async (idle, index) => assert.ok(await idle.send(familyOf(index), ++sequence), JSON.stringify(idle.outcomes))));
    const sendingBusy = busy.map(async (client, index) => {
      while (withinSendWindow() && (await client.send(familyOf(index + sequence), ++sequence)));
    });
    await eventually(() => count(busy.flatMap((client) => client.outcomes), (outcome) => outcome.status !== undefined) >= 200, 30_000, 'two hundred answers under load');

    const burst = bursting.map((client) => client.send('poll', ++sequence));
    // undici writes on a reused connection after a turn of the event loop.
    await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
    server.kill('SIGTERM');
    signalledAt = performance.now();
    const sendingWoken = woken.map(async (client, index) => {
      await pause(index * WOKEN_STEP_MS);
      while (withinSendWindow() && (await client.send(familyOf(index), ++sequence))) await pause(WOKEN_STEP_MS);
    });
    const exitCode = await server.exited;
    const stoppedMs = performance.now() - signalledAt;
    await Promise.all([...sendingBusy, ...burst, ...sendingWoken]);

    const outcomes = connections.flatMap((client) => client.outcomes);
    const afterSignal = outcomes.filter((outcome) => outcome.sentAt >= signalledAt);
    const unanswered = (which: Outcome[]) => which.filter((outcome) => outcome.status === undefined && outcome.error !== NEVER_SENT);
    const storedSerials = new Set((await store.db.selectFrom('okms').select('serial_number').execute()).map((row) => row.serial_number));
    const storedAcls = new Set((await store.db.selectFrom('acls').select('id').execute()).map((row) => row.id));
    const stored = (outcome: Outcome) => (outcome.family === 'poll' ? storedSerials : storedAcls).has(outcome.key);
    const output = server.output();
    diagnostic(
      `[${label}] SIGTERM to exit ${Math.round(stoppedMs)} ms; ${outcomes.length} requests, ${afterSignal.length} sent after the signal: ` +
        `${count(afterSignal, (outcome) => outcome.status !== undefined && outcome.status < 300)} done, ${count(afterSignal, (outcome) => outcome.status === 503)} answered 503, ` +
        `${count(afterSignal, (outcome) => outcome.error === NEVER_SENT)} refused a connection, ${unanswered(afterSignal).length} reset with no answer; ` +
        `before the signal ${unanswered(outcomes).length - unanswered(afterSignal).length} reset (${[...new Set(unanswered(outcomes).map((outcome) => outcome.error))].join(', ')})`,
    );

    assert.deepEqual(
      outcomes.flatMap((outcome) => {
        const problem = brokenPromise(outcome);
        return problem === undefined ? [] : [`${outcome.connection} ${outcome.family} sent ${Math.round(outcome.sentAt - signalledAt)} ms after the signal: ${problem}`];
      }),
      [],
    );
    assert.ok(afterSignal.length >= WOKEN_CONNECTIONS, `only ${afterSignal.length} requests sent after the signal`);
    assert.equal(exitCode, 0, output);
    assert.ok(stoppedMs < STOP_LIMIT_MS, `SIGTERM to exit took ${Math.round(stoppedMs)} ms`);
    // The connections left idle, the silent ones among them, were closed by the drain, not cut at its deadline.
    assert.doesNotMatch(output, /still running at the shutdown deadline/);
    // A 2xx is a write done; a 503 is a write not done, safe to send again.
    assert.deepEqual(
      outcomes.filter((outcome) => outcome.status !== undefined && outcome.status < 300 && !stored(outcome)).map((outcome) => `${outcome.family} ${outcome.key}: acknowledged, not stored`),
      [],
    );
    assert.deepEqual(outcomes.filter((outcome) => outcome.status === 503 && stored(outcome)).map((outcome) => `${outcome.family} ${outcome.key}: answered 503, stored`), []);
  } finally {
    server.kill('SIGKILL');
    await server.exited;
    await Promise.all(connections.map((client) => client.close()));
  }
}

forEachDatabase('keyfleet serve drain under keep-alive load', (kind) => {
  test('every request sent on an open keep-alive connection around SIGTERM is answered, 2xx or 503 SHUTTING_DOWN with Retry-After and Connection: close, none reset; every 2xx write is stored, no 503 write; exit 0 within 10 s, nothing cut at the deadline', { timeout: 60_000 }, async (t) => {
    const store = await openTestStore(kind);
    try {
      await drainUnderKeepAliveLoad(store, {}, kind, (message) => t.diagnostic(message));
    } finally {
      await store.close();
    }
  });

  if (kind === 'postgres') {
    test('the same with two worker processes (SERVE_WORKERS=2): every request around SIGTERM answered, none reset, writes as acknowledged, exit 0 within 10 s', { timeout: 60_000 }, async (t) => {
      const store = await openTestStore(kind);
      try {
        await drainUnderKeepAliveLoad(store, { SERVE_WORKERS: '2' }, `${kind}, 2 workers`, (message) => t.diagnostic(message));
      } finally {
        await store.close();
      }
    });
  }
});
