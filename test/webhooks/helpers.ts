import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/db/database.ts';

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

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/** Waits until `condition` returns a truthy value, checking every 20 ms, and returns it; fails after timeoutMs. */
export async function eventually<T>(condition: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Subscribes an existing OKM's status to these URLs (as the admin API stores them). */
export async function subscribe(db: Db, serialNumber: string, urls: string[]): Promise<void> {
  await db.updateTable('okms').set({ status_urls: JSON.stringify(urls) }).where('serial_number', '=', serialNumber).execute();
}

/** Settings for tests: deliveries to the local receivers allowed, short timeout and retry schedule. */
export const FAST_WEBHOOKS: Record<string, string> = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
};

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A long-running `keyfleet …` child process (serve, dispatch) with only PATH and the given settings. */
export function spawnKeyfleet(env: Record<string, string>, ...args: string[]): ChildProcess {
  return spawn(process.execPath, ['bin/keyfleet.js', ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Waits until `url` answers 2xx; fails if the process exits first. */
export async function waitUntilServing(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`keyfleet exited with ${child.exitCode}`);
      return fetch(url).then((response) => response.ok, () => false);
    },
    timeoutMs,
    `${url} answering`,
  );
}

/** Sends a signal and waits for the process to exit. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}
