import { request, type Agent } from 'undici';
import type { DeadlineQueue } from './deadline-queue.ts';
import { parseRetryAfter } from './retry-schedule.ts';
import { signatureHeader } from './signing.ts';
import type { WebhookEvent } from './fleet-events.ts';

/** What a status event says (SPEC §6); `data` is the OKM's status as of the poll that queued it. */
export interface StatusEvent extends WebhookEvent {
  type: 'okm.status';
  timestamp: string;
  data: { serial_number: string; last_sync_time: string; last_ip: string; firmware_version: string | null };
}

/** How one attempt ended: 2xx, 410 (the subscriber wants no more), or anything else (retried). */
export type AttemptResult =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'gone'; statusCode: 410 }
  | { kind: 'failed'; statusCode: number | null; error: string; retryAfterMs: number | undefined };

const USER_AGENT = 'keyfleet-webhooks/1';

/**
 * POSTs one signed event (a status event or a fleet event). Redirects are not followed (a 3xx is a failed attempt), the whole
 * exchange has the deadlines' timeout, and the response body is read and discarded.
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
  const deadline = deadlines.start();
  try {
    const response = await request(url, {
      method: 'POST',
      dispatcher: agent,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(signingKeys, event.id, timestamp, body),
      },
      signal: deadline.signal,
    });
    await response.body.dump();
    const statusCode = response.statusCode;
    if (statusCode >= 200 && statusCode < 300) return { kind: 'delivered', statusCode };
    if (statusCode === 410) return { kind: 'gone', statusCode };
    return {
      kind: 'failed',
      statusCode,
      error: statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`,
      retryAfterMs: parseRetryAfter(response.headers['retry-after'], Date.now()),
    };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name.includes('Timeout'));
    return { kind: 'failed', statusCode: null, error: timedOut ? `no answer within ${deadlines.timeoutMs} ms` : describe(error), retryAfterMs: undefined };
  } finally {
    deadline.finish();
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
