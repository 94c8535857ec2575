import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventually } from './eventually.ts';

/**
 * What "never a hang" means under a database outage: every request answers within this bound.
 * keyfleet gives up opening a PostgreSQL connection after 5 s (CONNECT_TIMEOUT_MS) and waits
 * at most 5 s for a SQLite lock (busy_timeout); a database that refuses fails in milliseconds.
 */
export const REQUEST_BOUND_MS = 8_000;

/** The kinds of request an outage load sends: each reads the database on its way in differently. */
export type Family = 'poll' | 'acl' | 'okms' | 'dlock';

export interface Answer {
  family: Family;
  /** HTTP status, or why there was none. */
  status: number | 'timeout' | 'network';
  body: unknown;
  /** The poll's serial number, for the check that an acknowledged poll was stored. */
  serial?: string;
  startedAt: number;
  ms: number;
}

export async function send(family: Family, url: string, init: RequestInit = {}): Promise<Omit<Answer, 'serial'>> {
  const started = Date.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_BOUND_MS) });
    const text = await response.text();
    return { family, status: response.status, body: text === '' ? undefined : JSON.parse(text), startedAt: started, ms: Date.now() - started };
  } catch (error) {
    const status = (error as Error).name === 'TimeoutError' ? 'timeout' : 'network';
    return { family, status, body: String(error), startedAt: started, ms: Date.now() - started };
  }
}

/** An ACL of one user on one lock, for customer `customer`. */
export const aclBody = (id: string, customer: string) =>
  JSON.stringify({
    id,
    customer,
    users: [{ user_id: 1, pin_hash: 'abc123', auth_time: 1, sounder: false, sounder_delay: 0, sounder_duration: 0, sounder_volume: 0, permissions: [1] }],
    locks: ['LOCK-1'],
  });

/** A 503 in the shape of its route family, with the database named as the cause. */
export function assertCleanUnavailable(answer: Pick<Answer, 'family' | 'body'>): void {
  if (answer.family === 'dlock') {
    assert.deepEqual(Object.keys(answer.body as object).sort(), ['msg', 'status'], JSON.stringify(answer));
    assert.equal((answer.body as { status: number }).status, 503);
  } else {
    assert.deepEqual(Object.keys(answer.body as object).sort(), ['error_code', 'error_msg'], JSON.stringify(answer));
    assert.equal((answer.body as { error_code: string }).error_code, 'DATABASE_UNAVAILABLE', JSON.stringify(answer));
  }
}

/** The answer a request gets while the database serves: the DLock reads ask for a lock that does not exist, with a valid key. */
const isNormalAnswer = (answer: Answer) => typeof answer.status === 'number' && (answer.status < 300 || (answer.family === 'dlock' && answer.status === 404));

/** Answers that are neither the normal one nor the documented 503: a 401 of a valid credential, a 500, no answer. */
export const unexpectedAnswers = (answers: readonly Answer[]) => answers.filter((answer) => !isNormalAnswer(answer) && answer.status !== 503);

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends GET `url` every 25 ms until it answers `status`; the milliseconds that took. */
export async function timeUntil(url: string, status: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  await eventually(async () => (await send('poll', url)).status === status, timeoutMs, `${url} answering ${status}`);
  return Date.now() - started;
}

export interface LoadCredentials {
  /** Device serial numbers the poll workers take in turn. */
  serials: readonly string[];
  /** The config path (settings.configPath). */
  configPath: string;
  customer: string;
  /** A customer token with acl:create: the way in verifies it and reads the customer. */
  customerToken?: string;
  /** An admin token: the way in verifies it with the deployment's keys. */
  adminToken?: string;
  /** A DLock API key: the way in reads the key's row. */
  apiKey?: string;
}

/**
 * Clients that keep sending until stopped, one request at a time each: device polls, ACL
 * creations with a customer token, OKM lists with an admin token, DLock reads with an API
 * key. Every answer is kept, in the order it came.
 */
export class OutageLoad {
  readonly answers: Answer[] = [];
  /** ACL ids whose creation was answered 201: each must be stored. */
  readonly acknowledgedAcls: string[] = [];
  #running = true;
  readonly #workers: Promise<void>[] = [];

  constructor(
    private readonly base: string,
    private readonly credentials: LoadCredentials,
    { pollWorkers = 2 }: { pollWorkers?: number } = {},
  ) {
    for (let worker = 0; worker < pollWorkers; worker++) this.#workers.push(this.#polls(worker, pollWorkers));
    const { customerToken, adminToken, apiKey } = credentials;
    if (customerToken) this.#workers.push(this.#aclCreations(customerToken));
    if (adminToken) this.#workers.push(this.#repeat(() => send('okms', `${base}/api/v1/okms?limit=5`, { headers: { authorization: `Bearer ${adminToken}` } })));
    if (apiKey) this.#workers.push(this.#repeat(() => send('dlock', `${base}/v1/dlock/LOCK-PROBE`, { headers: { authorization: `Bearer ${apiKey}` } })));
  }

  async #polls(worker: number, workers: number): Promise<void> {
    const { serials, configPath } = this.credentials;
    for (let index = worker; this.#running; index += workers) {
      const serial = serials[index % serials.length]!;
      this.answers.push({ ...(await send('poll', `${this.base}${configPath}/${serial}`)), serial });
    }
  }

  async #aclCreations(token: string): Promise<void> {
    while (this.#running) {
      const id = randomUUID();
      const answer = await send('acl', `${this.base}/api/v1/acls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: aclBody(id, this.credentials.customer),
      });
      this.answers.push(answer);
      if (answer.status === 201) this.acknowledgedAcls.push(id);
    }
  }

  async #repeat(request: () => Promise<Omit<Answer, 'serial'>>): Promise<void> {
    while (this.#running) this.answers.push(await request());
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }
}
