import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { issueToken } from '../../src/auth/tokens.ts';
import { forEachDatabase, openTestStore } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { serveProcess } from '../helpers/server-process.ts';
import { Receiver, insertOkmsWithQueuedStatus } from '../webhooks/helpers.ts';

/** The promise of the operator guide ("Stopping"): the process is gone within 10 s of SIGTERM. */
const SHUTDOWN_LIMIT_MS = 10_000;
const HANGING_DELIVERIES = 6;

/** Every answer of keyfleet is this (contract §9), a 503 during the drain too. */
const JSON_UTF8 = 'application/json; charset=utf-8';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The HTTP/1.1 answers in what a connection received, in order (Content-Length bodies only, as keyfleet sends). */
function parseResponses(raw: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd === -1) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: Buffer.from(rest.slice(bodyStart)).subarray(0, length).toString() });
    rest = Buffer.from(rest.slice(bodyStart)).subarray(length).toString();
  }
  return responses;
}

/**
 * A keep-alive connection with a request in flight: an ACL whose body has not all arrived, so
 * that the server is still reading it when the drain begins. `finish` sends the rest of that
 * body and `next` right behind it on the same connection, and resolves with what the
 * connection received until the server closed it; `closed` resolves when the server closes it.
 */
async function requestInFlight(port: number, token: string): Promise<{ finish(next: string): Promise<RawResponse[]>; closed: Promise<void> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  const body = JSON.stringify({ customer: 'acme', name: 'drain', locks: [], users: [] });
  const cut = Math.floor(body.length / 2);
  socket.write(
    `POST /api/v1/acls HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, cut)}`,
  );
  return {
    closed,
    async finish(next) {
      socket.write(body.slice(cut) + next);
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_LIMIT_MS))]);
      socket.destroy();
      return parseResponses(received);
    },
  };
}

/** The time of the first log line of the process with this message (pino's `time`, ms since the epoch). */
function loggedAt(output: string, message: string): number | undefined {
  const line = output.split('\n').find((entry) => entry.includes(`"msg":"${message}`));
  return line ? (JSON.parse(line) as { time: number }).time : undefined;
}

forEachDatabase('keyfleet serve stopped with deliveries hanging', (kind) => {
  test('SIGTERM while deliveries hang at subscribers that never answer and a client never ends its request: exit 0 within 10 s, the deliveries go back to the queue uncounted, requests during the drain get the documented JSON 503', { timeout: 90_000 }, async (t) => {
    const store = await openTestStore(kind);
    const receiver = await Receiver.start();
    // Accepts the connection and the request, and never answers: each attempt would hold 15 s (WEBHOOK_TIMEOUT_MS).
    receiver.reply = () => ({ status: 200, hang: true });
    const server = serveProcess({ ...store.database.env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', RATE_LIMIT_API_PER_MINUTE: '0' });
    try {
      const base = await server.listening;
      const port = Number(new URL(base).port);
      const { token } = await issueToken(store.db, store.keyRing, store.settings, { scopes: ['admin'], ttlSeconds: 600 });
      const admin = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      // Status events (contract §6) and a fleet event (contract §14) to the same hanging host.
      const serials = Array.from({ length: HANGING_DELIVERIES }, (_, index) => `HANG-${index}`);
      await insertOkmsWithQueuedStatus(store.db, serials, (serial) => receiver.url(`/${serial}`));
      const endpoint = await fetch(`${base}/api/v1/webhook-endpoints`, { method: 'POST', headers: admin, body: JSON.stringify({ url: receiver.url('/fleet'), event_types: ['okm.overdue'] }) });
      assert.equal(endpoint.status, 201, await endpoint.clone().text());
      const { data } = (await endpoint.json()) as { data: { id: number } };
      assert.equal((await fetch(`${base}/api/v1/webhook-endpoints/${data.id}/test`, { method: 'POST', headers: { authorization: admin.authorization } })).status, 202);
      await eventually(() => receiver.received.length >= HANGING_DELIVERIES + 1, 30_000, 'every delivery under way at the subscriber');

      const [jwtConnection, dlockConnection, stalledConnection] = await Promise.all([requestInFlight(port, token), requestInFlight(port, token), requestInFlight(port, token)]);
      // The server has the first part of each body: the requests are in flight.
      await new Promise((resolve) => setTimeout(resolve, 200));

      const signalled = performance.now();
      server.kill('SIGTERM');
      await eventually(() => /"msg":"shutting down"/.test(server.output()), 5_000, 'the drain begun');
      const [jwtAnswers, dlockAnswers] = await Promise.all([
        jwtConnection.finish(`GET /api/v1/okms HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`),
        dlockConnection.finish('GET /v1/dlock/LOCK-1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer kf_live_x\r\n\r\n'),
      ]);
      // The third never sends the rest of its body: the server drops it at the drain deadline (8 s).
      await stalledConnection.closed;
      const exitCode = await server.exited;
      const stoppedMs = performance.now() - signalled;
      const output = server.output();
      const shutdownAt = loggedAt(output, 'shutting down')!;
      const cutAt = loggedAt(output, 'deliveries still waiting for an answer at the stop deadline');
      const droppedAt = loggedAt(output, 'requests still running at the shutdown deadline');
      t.diagnostic(
        `[${kind}] SIGTERM to exit: ${Math.round(stoppedMs)} ms; in the log, deliveries cut ${cutAt === undefined ? '-' : cutAt - shutdownAt} ms and the stalled request dropped ${droppedAt === undefined ? '-' : droppedAt - shutdownAt} ms after "shutting down"`,
      );

      // The requests in flight at the signal were answered as usual; the ones after it, 503 in the route family's shape.
      for (const [answers, shape] of [
        [jwtAnswers, { error_code: 'SHUTTING_DOWN' }],
        [dlockAnswers, { status: 503 }],
      ] as const) {
        assert.equal(answers.length, 2, JSON.stringify(answers));
        assert.notEqual(answers[0]!.status, 503, JSON.stringify(answers[0]));
        const [, drained] = answers as [RawResponse, RawResponse];
        assert.equal(drained.status, 503, JSON.stringify(drained));
        assert.equal(drained.headers['content-type'], JSON_UTF8);
        assert.match(drained.headers['retry-after'] ?? '', /^[1-9][0-9]*$/);
        assert.equal(drained.headers.connection, 'close');
        const body = JSON.parse(drained.body) as Record<string, unknown>;
        assert.deepEqual(Object.keys(body).sort(), Object.keys(shape).includes('status') ? ['msg', 'status'] : ['error_code', 'error_msg']);
        for (const [name, value] of Object.entries(shape)) assert.equal(body[name], value);
      }

      assert.equal(exitCode, 0, output);
      assert.ok(stoppedMs < SHUTDOWN_LIMIT_MS, `SIGTERM to exit took ${Math.round(stoppedMs)} ms`);
      assert.doesNotMatch(output, /unhandled error|"level":50/, output);

      assert.ok(cutAt !== undefined && droppedAt !== undefined, output);

      // The attempts cut short are not counted: each event is pending and unclaimed, for the next dispatcher.
      const rows = [
        ...(await store.db.selectFrom('status_events').select(['okm_serial as what', 'state', 'attempts', 'claim_token']).execute()),
        ...(await store.db.selectFrom('fleet_event_deliveries').select(['event_type as what', 'state', 'attempts', 'claim_token']).execute()),
      ];
      assert.equal(rows.length, HANGING_DELIVERIES + 1);
      for (const row of rows) {
        assert.equal(row.state, 'pending', JSON.stringify(row));
        assert.equal(row.attempts, 0, JSON.stringify(row));
        assert.equal(row.claim_token, null, JSON.stringify(row));
      }
    } finally {
      if ((await Promise.race([server.exited, Promise.resolve('running')])) === 'running') server.kill('SIGKILL');
      await receiver.close();
      await store.close();
    }
  });
});
