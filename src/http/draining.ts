import { once } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyError, FastifyInstance } from 'fastify';
import { RETRY_AFTER_SECONDS } from './error-handler.ts';
import { HttpError } from './errors.ts';

/** What a request that arrives while the server drains reads: another server (or this one, restarted) answers it. */
export const SHUTTING_DOWN = 'Server is shutting down, try again later';

/** Per HTTP server: switches its app to the drain answers of registerDrainAnswer. */
const drainSwitches = new WeakMap<Server, () => void>();

/**
 * Requests that arrive while the server stops get a 503 with Retry-After in the route family's
 * error shape, through the central error handler (Fastify's own answer, `return503OnClosing`,
 * off in server.ts, is JSON without charset and in neither shape). Every answer sent while the
 * server drains, a 503 or that of a request already running, says `Connection: close` when it
 * answers the last request received on its connection: the client opens its next connection
 * elsewhere, and this one closes once answered. An answer with a pipelined request behind it
 * keeps the connection, or that request, done already perhaps, would lose its answer.
 */
export function registerDrainAnswer(app: FastifyInstance): void {
  let draining = false;
  const lastRequestOn = new WeakMap<net.Socket, IncomingMessage>();
  drainSwitches.set(app.server, () => (draining = true));
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onRequest', (request, _reply, done) => {
    // Only the drain's requests are tracked: a poll pays a boolean test, not a map write. A
    // connection whose last request came before the drain keeps it, and closes when idle after the linger.
    if (!draining) return done();
    lastRequestOn.set(request.raw.socket, request.raw);
    // The error handler renders HttpError; Fastify's type for `done` names only its own errors.
    done(new HttpError(503, 'SHUTTING_DOWN', SHUTTING_DOWN, { 'retry-after': RETRY_AFTER_SECONDS }) as unknown as FastifyError);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (draining && lastRequestOn.get(request.raw.socket) === request.raw) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * Resolves after one full turn of the event loop, so after a poll phase: by then Node has read
 * what the kernel held for every socket when this was called (requests sitting in keep-alive
 * connections, connections waiting to be accepted), however busy the loop was.
 */
const afterPendingReads = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/**
 * The first part of stopping a listening app, before `app.close()`: from now on every request
 * is answered 503 (registerDrainAnswer); the server stops accepting connections but keeps
 * reading the open ones for `lingerMs` (less if they all close sooner), answering each request
 * that arrives on them and closing each connection with its answer; then it closes the
 * keep-alive connections that are still idle. Requests still running go on, and close their
 * connections with their answers; `app.close()` waits for them.
 *
 * Node's own stop (http.Server#close, which `app.close()` calls) destroys every connection that
 * looks idle to Node at once, including one whose next request already sits unread in its
 * socket buffer because the event loop is busy: the kernel answers that request with a reset,
 * and a client that sent a POST cannot tell whether it was done.
 *
 * One race remains that HTTP/1.1 keep-alive cannot remove: a client that stays silent for the
 * whole linger and sends just as its idle connection is closed. Its request crosses the
 * server's FIN and gets no answer; RFC 9112 §9.3.1 lets a client retry such a request when it
 * is idempotent (a write with an id, such as an ACL's, can be sent again to find out). The
 * window is kept to the time between the last read of the socket and its close: the idle
 * connections are closed right after a poll phase has read everything pending.
 */
export async function drainConnections(app: FastifyInstance, lingerMs: number): Promise<void> {
  const server = app.server;
  const startDraining = drainSwitches.get(server);
  if (!startDraining) throw new Error('drainConnections: the app answers no drain (registerDrainAnswer)');
  startDraining();
  // Connections already queued in the kernel are accepted first: closing the listening socket
  // would drop them with a reset, requests and all.
  await afterPendingReads();
  // net.Server#close, not http.Server#close: it stops accepting and leaves the open connections
  // be; 'close' follows once the last of them has closed.
  net.Server.prototype.close.call(server);
  const lingerOver = new AbortController();
  // The first to settle resolves the race; the abort then rejects the other one into it, unheard.
  await Promise.race([once(server, 'close', { signal: lingerOver.signal }), sleep(lingerMs, undefined, { signal: lingerOver.signal })]);
  lingerOver.abort();
  await afterPendingReads();
  server.closeIdleConnections();
}
