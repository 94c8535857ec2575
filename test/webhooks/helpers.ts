import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mock } from 'node:test';
import { Registry } from 'prom-client';
import type { Db } from '../../src/db/database.ts';
import { createDispatcher, type Dispatcher, type DispatcherOptions } from '../../src/webhooks/dispatcher.ts';
import { registerStatusEventMetrics } from '../../src/webhooks/metrics.ts';
import type { TestApp } from '../helpers/app.ts';

export interface ReceivedEvent {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** The status code the receiver answered with (undefined while hanging). */
  status?: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Never answer (the dispatcher's timeout must end the attempt). */
  hang?: boolean;
  delayMs?: number;
}

/** A real HTTP server on 127.0.0.1 that records every request and answers as `reply` says (200 by default). */
export class Receiver {
  readonly received: ReceivedEvent[] = [];
  /** webhook-ids that arrived while a request with the same id was still being answered. */
  readonly concurrentDuplicates: string[] = [];
  readonly #answering = new Set<string>();
  reply: (event: ReceivedEvent) => Reply = () => ({ status: 200 });
  readonly #server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const event: ReceivedEvent = { path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString(), receivedAt: Date.now() };
      this.received.push(event);
      const id = String(request.headers['webhook-id']);
      if (this.#answering.has(id)) this.concurrentDuplicates.push(id);
      this.#answering.add(id);
      const answer = this.reply(event);
      if (answer.hang) return;
      const send = () => {
        event.status = answer.status;
        this.#answering.delete(id);
        response.writeHead(answer.status, answer.headers).end();
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  url(path = '/events'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests to one path; the bodies parsed. */
  eventsAt(path: string): (ReceivedEvent & { event: { id: string; data: Record<string, unknown> } })[] {
    return this.received.filter((entry) => entry.path === path).map((entry) => ({ ...entry, event: JSON.parse(entry.body) }));
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** Subscribes an existing OKM's status to these URLs (as the admin API stores them). */
export async function subscribe(db: Db, serialNumber: string, urls: string[]): Promise<void> {
  await db.updateTable('okms').set({ status_urls: JSON.stringify(urls) }).where('serial_number', '=', serialNumber).execute();
}

/** Settings for tests: deliveries to the local receivers allowed, short timeout and retry schedule. */
/** Subscribed OKMs (no customer) as their polls leave them: a status event marked queued on each poll row, for a dispatcher to fan out. */
export async function insertOkmsWithQueuedStatus(db: Db, serials: string[], urlOf: (serial: string) => string): Promise<void> {
  const now = Date.now();
  await db
    .insertInto('okms')
    .values(
      serials.map((serial) => ({
        serial_number: serial,
        customer_id: null,
        auditing_enabled: 0,
        status_urls: JSON.stringify([urlOf(serial)]),
        overdue_at: null,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  await db
    .insertInto('okm_polls')
    .values(serials.map((serial) => ({ serial_number: serial, last_sync_time: now, last_ip: '192.0.2.1', reported: '{}', install_code: null, status_queued_at: now })))
    .execute();
}

export const FAST_WEBHOOKS: Record<string, string> = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
};

/** A dispatcher of its own on a test app's database and settings (not started), with throwaway metrics. */
export function testDispatcher(subject: TestApp, options: Pick<DispatcherOptions, 'serverBusy'> = {}): Dispatcher {
  return createDispatcher({
    db: subject.db,
    dialect: subject.dialect,
    keyRing: subject.app.keyRing,
    settings: subject.settings,
    metrics: registerStatusEventMetrics(new Registry(), async () => 0),
    log: subject.app.log,
    ...options,
  });
}

/**
 * A resolver of the test's own that rebinds between the check and the connection: the answer
 * reads as a public address the first time and as 127.0.0.1 from then on. Only the check of
 * the address actually connected to can refuse it.
 */
export function rebindingResolver(hostname: string) {
  const systemLookup = dns.lookup.bind(dns);
  return mock.method(dns, 'lookup', (name: string, options: dns.LookupAllOptions, callback: (error: Error | null, addresses: dns.LookupAddress[]) => void) => {
    if (name !== hostname) return systemLookup(name, options, callback);
    let reads = 0;
    const answer = { family: 4, get address() { return reads++ === 0 ? '93.184.216.34' : '127.0.0.1'; } };
    process.nextTick(() => callback(null, [answer]));
  });
}
