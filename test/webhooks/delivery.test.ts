import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeadlineQueue } from '../../src/webhooks/deadline-queue.ts';
import { MAX_ANSWER_BYTES } from '../../src/shared/outside-answers.ts';
import { BODY_GRACE_MS, postStatusEvent } from '../../src/webhooks/delivery.ts';
import { createDeliveryAgent } from '../../src/webhooks/ssrf-guard.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { EndlessBodyServer, type EndlessAnswer } from '../helpers/endless-body-server.ts';
import { eventually } from '../helpers/eventually.ts';
import { call, issueTokens, type Tokens } from '../okm/admin-helpers.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { ENDPOINTS, createFleetEndpoint, type DeliveryLogEntry } from './fleet-event-helpers.ts';
import { FAST_WEBHOOKS, subscribe, type Receiver } from './helpers.ts';

// contract §16: at most 64 KiB of any answer from outside is read, then the connection is dropped,
// and an answer whose body goes past the bound, or does not end within BODY_GRACE_MS of its
// headers, is a failed attempt whatever its status: the retry schedule, not the subscriber,
// sets how often keyfleet pays for such an answer. Two counts: what keyfleet read from the connection
// (its socket's bytesRead: the status line, headers and body, in reads of up to 64 KiB, so the
// read that crosses the bound is whole), and what the server wrote before the connection closed,
// counted on the server's side: that includes what the socket buffers of both ends take in on
// loopback whether the client reads or not (about 3.7 MiB here with Linux's default 4 MiB
// tcp_wmem maximum), gigabytes when the client reads to a 5 s deadline.
const READ_BOUND = MAX_ANSWER_BYTES + 64 * 1024 + 1024;
const WRITE_BOUND = 8 * 1024 * 1024;
/** A deadline long enough that an answer read to its end (or to the deadline) shows in the timings. */
const TIMEOUT_MS = 5_000;

/** The error of an attempt whose answer's body went past the bound, after the status's own text. */
const TOO_LONG = 'the body was longer than 64 KiB: the connection was dropped';
const TOO_SLOW = `the body did not end within ${BODY_GRACE_MS} ms of the headers: the connection was dropped`;

const event = (id: string) => ({ id, type: 'webhook.test', timestamp: new Date().toISOString(), data: {} });

/** The answer's connection closed by the client; its figures. */
async function closedAnswer(server: EndlessBodyServer, path: string): Promise<EndlessAnswer> {
  return eventually(() => server.answersAt(path).find((answer) => answer.closedAt !== undefined), TIMEOUT_MS * 2, `the connection of ${path} closed`);
}

/** Waits until every answer at `path` is closed and read, and checks that each stayed within the bounds; returns the figures. */
async function boundedAnswers(server: EndlessBodyServer, path: string): Promise<string> {
  const answers = server.answersAt(path);
  await eventually(() => answers.every((answer) => answer.closedAt !== undefined && server.clientBytesRead(answer) !== undefined), TIMEOUT_MS * 2, `the connections of ${path} closed`);
  for (const answer of answers) {
    assert.ok(server.clientBytesRead(answer)! <= READ_BOUND, `keyfleet read ${server.clientBytesRead(answer)} bytes of an answer`);
    assert.ok(answer.bytesWritten < WRITE_BOUND, `the server wrote ${answer.bytesWritten} bytes`);
  }
  return answers.map((answer) => `${server.clientBytesRead(answer)} read / ${answer.bytesWritten} written`).join(', ');
}

describe('one attempt against an answer without end', () => {
  let server: EndlessBodyServer;
  const agent = createDeliveryAgent({ allowPrivateNetworks: true, connectionsPerHost: 4, timeoutMs: TIMEOUT_MS });
  const deadlines = new DeadlineQueue(TIMEOUT_MS);
  const keys = [Buffer.alloc(32, 1)];
  before(async () => {
    server = await EndlessBodyServer.start();
  });
  after(async () => {
    await agent.close();
    await server.close();
  });

  async function attempt(path: string) {
    const startedAt = performance.now();
    const result = await postStatusEvent(agent, server.url(path), event(`msg_${path.slice(1)}`), keys, deadlines, Date.now());
    return { result, seconds: (performance.now() - startedAt) / 1000 };
  }

  test('200 and an endless body: failed (the body past 64 KiB) within a second or two, at most 64 KiB of the body read, the connection dropped', async (t) => {
    server.status = 200;
    server.mode = 'endless';

    const { result, seconds } = await attempt('/endless-200');

    const figures = await boundedAnswers(server, '/endless-200');
    t.diagnostic(`answered in ${seconds.toFixed(3)} s; bytes: ${figures}`);
    assert.deepEqual(result, { kind: 'failed', statusCode: 200, error: `HTTP 200; ${TOO_LONG}`, retryAfterMs: undefined });
    assert.ok(seconds < 2, `took ${seconds} s`);
  });

  test('200 and a 4 MiB body that does end: failed all the same, at most 64 KiB of the body read', async (t) => {
    server.status = 200;
    server.mode = 'huge';

    const { result, seconds } = await attempt('/huge-200');

    const figures = await boundedAnswers(server, '/huge-200');
    t.diagnostic(`answered in ${seconds.toFixed(3)} s; bytes: ${figures}`);
    assert.deepEqual(result, { kind: 'failed', statusCode: 200, error: `HTTP 200; ${TOO_LONG}`, retryAfterMs: undefined });
  });

  test('500 and an endless body: failed with HTTP 500 within a second or two, at most 64 KiB of the body read', async (t) => {
    server.status = 500;
    server.mode = 'endless';

    const { result, seconds } = await attempt('/endless-500');

    const figures = await boundedAnswers(server, '/endless-500');
    t.diagnostic(`answered in ${seconds.toFixed(3)} s; bytes: ${figures}`);
    assert.deepEqual(result, { kind: 'failed', statusCode: 500, error: `HTTP 500; ${TOO_LONG}`, retryAfterMs: undefined });
    assert.ok(seconds < 2, `took ${seconds} s`);
  });

  test('410 and an endless body: gone all the same (the subscriber asked for no more, which costs keyfleet least)', async () => {
    server.status = 410;
    server.mode = 'endless';

    const { result } = await attempt('/endless-410');

    await boundedAnswers(server, '/endless-410');
    assert.deepEqual(result, { kind: 'gone', statusCode: 410 });
  });

  test('200 and a body that trickles without end: failed once the body has had its second, well before the deadline, and the connection is dropped', async (t) => {
    server.status = 200;
    server.mode = 'drip';

    const { result, seconds } = await attempt('/drip-200');

    const answer = await closedAnswer(server, '/drip-200');
    t.diagnostic(`answered in ${seconds.toFixed(3)} s; the server wrote ${answer.bytesWritten} bytes before the connection closed`);
    assert.deepEqual(result, { kind: 'failed', statusCode: 200, error: `HTTP 200; ${TOO_SLOW}`, retryAfterMs: undefined });
    assert.ok(seconds >= BODY_GRACE_MS / 1000 - 0.05 && seconds < 2, `took ${seconds} s`);
  });

  test('a short answer is read to its end and its connection kept for the next attempts', async () => {
    server.status = 200;
    server.mode = 'short';
    const connectionsBefore = server.connections;

    for (let index = 0; index < 5; index++) assert.deepEqual((await attempt(`/short-${index}`)).result, { kind: 'delivered', statusCode: 200 });

    // The agent may open a second connection while the first is being released; never one per attempt.
    assert.ok(server.connections - connectionsBefore <= 2, `${server.connections - connectionsBefore} connections for 5 attempts`);
  });

  test('the bound is 64 KiB', () => {
    assert.equal(MAX_ANSWER_BYTES, 64 * 1024);
  });
});

/** Long enough that an OKM polling every 50 ms for half a second polls only within the first delay (±20 %). */
const RETRY_DELAY_MS = 1_000;

forEachDatabase('deliveries to subscribers whose answers have no end', (kind) => {
  let subject: TestApp;
  let tokens: Tokens;
  let endless: EndlessBodyServer;
  before(async () => {
    endless = await EndlessBodyServer.start();
    subject = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_RETRY_SCHEDULE: `${RETRY_DELAY_MS}ms,${RETRY_DELAY_MS}ms` });
    tokens = await issueTokens(subject);
  });
  after(async () => {
    await subject.close();
    await endless.close();
  });

  async function subscribedOkm(url: string): Promise<string> {
    const serial = newSerial('ENDLESS');
    await poll(subject, serial);
    await subscribe(subject.db, serial, [url]);
    return serial;
  }

  const statusRow = (serial: string) => subject.db.selectFrom('status_events').selectAll().where('okm_serial', '=', serial).executeTakeFirst();
  const failures = (serial: string) => subject.db.selectFrom('status_delivery_failures').selectAll().where('okm_serial', '=', serial).orderBy('id').execute();
  /** The shortest time between the end of one attempt and the start of the next, as the server saw them. */
  const shortestGapMs = (answers: EndlessAnswer[]) => Math.min(...answers.slice(1).map((answer, index) => answer.startedAt - answers[index]!.closedAt!));

  test('a status subscriber answering 200 with an endless body, its OKM polling all along: each attempt fails (the body past 64 KiB) and waits out the retry schedule, then the delivery is failed; at most 64 KiB read per attempt', async (t) => {
    endless.status = 200;
    endless.mode = 'endless';
    const serial = await subscribedOkm(endless.url('/status-200'));
    const answers = () => endless.answersAt('/status-200');

    // Each poll queues a new status: a delivered attempt would be followed by another at once.
    const startedAt = performance.now();
    for (let round = 0; round < 10; round++) {
      await poll(subject, serial);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const pollingSeconds = (performance.now() - startedAt) / 1000;
    await eventually(() => answers().length >= 1, TIMEOUT_MS, 'the first attempt');
    const attemptsWhilePolling = answers().length;

    const row = await eventually(async () => (await statusRow(serial))?.state === 'failed' && statusRow(serial), TIMEOUT_MS * 2);
    const figures = await boundedAnswers(endless, '/status-200');
    t.diagnostic(
      `${attemptsWhilePolling} attempt(s) in ${pollingSeconds.toFixed(2)} s of polling, ${answers().length} in all; ` +
        `shortest gap between attempts ${shortestGapMs(answers()).toFixed(0)} ms; bytes per attempt: ${figures}`,
    );
    assert.equal(attemptsWhilePolling, 1);
    assert.equal(row!.last_status_code, 200);
    assert.deepEqual(
      (await failures(serial)).map((failure) => [failure.status_code, failure.error, failure.outcome]),
      [[200, `HTTP 200; ${TOO_LONG}`, 'retrying'], [200, `HTTP 200; ${TOO_LONG}`, 'retrying'], [200, `HTTP 200; ${TOO_LONG}`, 'failed']],
    );
    assert.equal(answers().length, 3);
    // The schedule's delay less its 20 % jitter (and a few ms between the two clocks).
    assert.ok(shortestGapMs(answers()) >= RETRY_DELAY_MS * 0.8 - 10, `attempts ${shortestGapMs(answers())} ms apart`);
  });

  test('a status subscriber answering 500 with an endless body: each attempt fails with HTTP 500 at once, retried by the schedule, then failed', async (t) => {
    endless.status = 500;
    endless.mode = 'endless';
    const serial = await subscribedOkm(endless.url('/status-500'));
    const startedAt = performance.now();

    await poll(subject, serial);

    const row = await eventually(async () => (await statusRow(serial))?.state === 'failed' && statusRow(serial), TIMEOUT_MS * 4);
    const seconds = (performance.now() - startedAt) / 1000;
    const answers = endless.answersAt('/status-500');
    const figures = await boundedAnswers(endless, '/status-500');
    t.diagnostic(`${answers.length} attempts, failed after ${seconds.toFixed(3)} s; bytes per attempt: ${figures}`);
    assert.equal(row!.last_status_code, 500);
    assert.deepEqual(
      (await failures(serial)).map((failure) => [failure.status_code, failure.error, failure.outcome]),
      [[500, `HTTP 500; ${TOO_LONG}`, 'retrying'], [500, `HTTP 500; ${TOO_LONG}`, 'retrying'], [500, `HTTP 500; ${TOO_LONG}`, 'failed']],
    );
    assert.equal(answers.length, 3);
    assert.ok(seconds < (2 * RETRY_DELAY_MS * 1.2) / 1000 + 1, `failed after ${seconds} s`);
  });

  const deliveryLog = async (id: number): Promise<DeliveryLogEntry[]> => (await call(subject, 'GET', `${ENDPOINTS}/${id}/deliveries`, { token: tokens.acmeWrite })).json().data;

  for (const status of [200, 500]) {
    test(`a fleet-event endpoint answering ${status} with an endless body: failed after its retries, the body past 64 KiB named in the log, at most 64 KiB of the body read per attempt`, async (t) => {
      endless.status = status;
      endless.mode = 'endless';
      // createFleetEndpoint takes a receiver: only its url() is used.
      const { id, path } = await createFleetEndpoint(subject, endless as unknown as Receiver, tokens.acmeWrite, `/fleet-${status}`, ['okm.overdue']);
      const startedAt = performance.now();

      assert.equal((await call(subject, 'POST', `${ENDPOINTS}/${id}/test`, { token: tokens.acmeWrite })).statusCode, 202);

      const [entry] = await eventually(async () => {
        const log = await deliveryLog(id);
        return log[0] !== undefined && log[0].state !== 'pending' && log;
      }, TIMEOUT_MS * 4);
      const seconds = (performance.now() - startedAt) / 1000;
      const figures = await boundedAnswers(endless, path);
      t.diagnostic(`${endless.answersAt(path).length} attempts, ${entry!.state} after ${seconds.toFixed(3)} s; shortest gap ${shortestGapMs(endless.answersAt(path)).toFixed(0)} ms; bytes per attempt: ${figures}`);
      assert.deepEqual(
        { state: entry!.state, attempts: entry!.attempts, last_status_code: entry!.last_status_code, last_error: entry!.last_error },
        { state: 'failed', attempts: 3, last_status_code: status, last_error: `HTTP ${status}; ${TOO_LONG}` },
      );
      assert.ok(shortestGapMs(endless.answersAt(path)) >= RETRY_DELAY_MS * 0.8 - 10);
    });
  }
});
