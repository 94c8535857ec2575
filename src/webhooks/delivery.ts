import type { Agent } from 'undici';
import { DeadlineQueue } from './deadline-queue.ts';
import { parseRetryAfter } from './retry-schedule.ts';
import { signatureHeader } from './signing.ts';
import { MAX_ANSWER_BYTES } from '../shared/outside-answers.ts';
import type { WebhookEvent } from './fleet-events.ts';

/** What a status event says (contract §6); `data` is the OKM's status as of the poll that queued it. */
export interface StatusEvent extends WebhookEvent {
  type: 'okm.status';
  timestamp: string;
  data: { serial_number: string; last_sync_time: string; last_ip: string; firmware_version: string | null };
}

/**
 * How one attempt ended: a 2xx whose body ended within its bounds, 410 (the subscriber wants no
 * more), or anything else (retried).
 */
export type AttemptResult =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'gone'; statusCode: 410 }
  | { kind: 'failed'; statusCode: number | null; error: string; retryAfterMs: number | undefined };

const USER_AGENT = 'keyfleet-webhooks/1';

const targets = new Map<string, { origin: string; path: string }>();
/** Origin and path of a URL; the few distinct URLs of a fleet are parsed once. */
function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (target === undefined) {
    if (targets.size >= 10_000) targets.clear();
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    targets.set(url, target);
  }
  return target;
}

/** The value of a header in undici's raw list (name, value, name, value...). */
function rawHeader(rawHeaders: readonly Buffer[], name: string): string | undefined {
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if (rawHeaders[index]!.toString('latin1').toLowerCase() === name) return rawHeaders[index + 1]!.toString('latin1');
  }
  return undefined;
}

interface Answer {
  statusCode: number;
  retryAfter: string | undefined;
  /** Why the body was not read to its end and the connection was dropped; undefined when it ended. */
  bodyDropped: string | undefined;
}

/**
 * How long the body may take once the status line and headers are in, within the attempt's
 * deadline: a body that trickles holds the connection no longer than this.
 */
export const BODY_GRACE_MS = 1_000;

const BODY_TOO_LONG = `the body was longer than ${MAX_ANSWER_BYTES / 1024} KiB: the connection was dropped`;
const BODY_TOO_SLOW = `the body did not end within ${BODY_GRACE_MS} ms of the headers: the connection was dropped`;
/** One timer for the body graces of every attempt of the process (see DeadlineQueue). */
const bodyDeadlines = new DeadlineQueue(BODY_GRACE_MS);

class AnswerDropped extends Error {
  constructor(why: string) {
    super(`answer dropped after its headers: ${why}`);
    this.name = 'AnswerDropped';
  }
}

/**
 * One POST through the agent, answered with its status once the body has ended, or once
 * MAX_ANSWER_BYTES of it or BODY_GRACE_MS have passed (then the connection is dropped, and the
 * answer says why); rejected when the deadline passes before the headers. The body is never
 * kept. undici's dispatch with a plain handler: its `request` builds a body stream, an async
 * resource and abort listeners per call, a third of a dispatcher's CPU per event.
 */
function post(agent: Agent, url: string, headers: Record<string, string>, body: string, deadlines: DeadlineQueue): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let abortRequest: ((reason: Error) => void) | undefined;
    let expiredWith: Error | undefined;
    /** Set with the headers: from then on the attempt ends with an answer, whatever becomes of the body. */
    let answer: Answer | undefined;
    let bytesRead = 0;
    let settled = false;
    let bodyDeadline: { finish(): void } | undefined;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      deadline.finish();
      bodyDeadline?.finish();
      if (answer) resolve(answer);
      else reject(error!);
    };
    /** Ends the attempt with the status already in, and closes the connection (undici destroys the socket of an aborted request). */
    const drop = (why: string) => {
      if (settled) return;
      answer!.bodyDropped = why;
      settle();
      abortRequest?.(new AnswerDropped(why));
    };
    const deadline = deadlines.start((reason) => {
      if (answer) return drop(`the body did not end within the ${deadlines.timeoutMs} ms of the attempt: the connection was dropped`);
      expiredWith = reason;
      abortRequest?.(reason);
      settle(reason);
    });
    const { origin, path } = targetOf(url);
    agent.dispatch(
      { origin, path, method: 'POST', headers, body },
      {
        onConnect(abort) {
          if (expiredWith) abort(expiredWith);
          else abortRequest = abort;
        },
        onHeaders(code, rawHeaders) {
          if (code < 200) return true;
          answer = { statusCode: code, retryAfter: code >= 300 ? rawHeader(rawHeaders, 'retry-after') : undefined, bodyDropped: undefined };
          bodyDeadline = bodyDeadlines.start(() => drop(BODY_TOO_SLOW));
          return true;
        },
        onData(chunk) {
          // Nothing of the body is used: a short one is read to its end so that the connection
          // serves the next attempt; past MAX_ANSWER_BYTES no more is read and it is dropped.
          bytesRead += chunk.length;
          if (bytesRead <= MAX_ANSWER_BYTES) return true;
          drop(BODY_TOO_LONG);
          return false;
        },
        onComplete() {
          settle();
        },
        onError(error) {
          // After the headers, a body that the subscriber cut short cost nothing more than a
          // short one: the status decides (a drop by keyfleet has settled the attempt already).
          settle(error);
        },
      },
    );
  });
}

/**
 * POSTs one signed event (a status event or a fleet event). Redirects are not followed (a 3xx
 * is a failed attempt), the whole exchange has the deadlines' timeout, and the body is never
 * used: at most MAX_ANSWER_BYTES of it are read, and discarded.
 *
 * A 2xx is delivered only if its body also ended within MAX_ANSWER_BYTES and BODY_GRACE_MS.
 * An answer that went past either is a failed attempt, whatever its status, so that the retry
 * schedule spaces the next ones out: counted as delivered, it would be sent the OKM's next
 * status at once, every poll, each time on a new connection (this one was dropped) and with
 * 64 KiB read or a lane held for a second, which is what such a subscriber costs keyfleet.
 * That holds for a body that trickles as well as for one too long: a subscriber is asked to
 * end its answer promptly, and a trickling one would otherwise hold one of its host's lanes
 * for BODY_GRACE_MS per event, at the fleet's polling rate. A 410 stops deliveries whatever
 * its body, which is what costs least.
 */
export async function postStatusEvent(
  agent: Agent,
  url: string,
  event: WebhookEvent,
  signingKeys: readonly Buffer[],
  deadlines: DeadlineQueue,
  now: number,
): Promise<AttemptResult> {
  const body = JSON.stringify(event);
  const timestamp = Math.floor(now / 1000);
  try {
    const { statusCode, retryAfter, bodyDropped } = await post(
      agent,
      url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(signingKeys, event.id, timestamp, body),
      },
      body,
      deadlines,
    );
    if (statusCode === 410) return { kind: 'gone', statusCode };
    if (statusCode >= 200 && statusCode < 300 && bodyDropped === undefined) return { kind: 'delivered', statusCode };
    const status = statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`;
    return {
      kind: 'failed',
      statusCode,
      error: bodyDropped === undefined ? status : `${status}; ${bodyDropped}`,
      retryAfterMs: parseRetryAfter(retryAfter, Date.now()),
    };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name.includes('Timeout'));
    return { kind: 'failed', statusCode: null, error: timedOut ? `no answer within ${deadlines.timeoutMs} ms` : describe(error), retryAfterMs: undefined };
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = (cause ?? error) as { code?: unknown };
  return typeof code.code === 'string' && !(cause ?? error).message.includes(code.code)
    ? `${code.code}: ${(cause ?? error).message}`
    : (cause ?? error).message;
}
