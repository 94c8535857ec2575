import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { EndlessBodyServer, type EndlessAnswer } from '../helpers/endless-body-server.ts';
import { eventually } from '../helpers/eventually.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { FAST_WEBHOOKS, Receiver, subscribe } from './helpers.ts';

// A subscriber whose answers never end may hold at most WEBHOOK_CONCURRENCY_PER_HOST of the
// dispatcher's WEBHOOK_CONCURRENCY slots; the others stay free for hosts that answer. The
// process has just twice a host's share here, so a host that took more than its share would
// leave the good host waiting for its slots (a second per attempt for a trickling body).
const PER_HOST = 2;
const CONCURRENCY = 4;
// The OKMs of both hosts poll at once each round: fewer than the 32 requests in progress from
// which the server counts as busy and its dispatcher holds back (src/webhooks/plugin.ts).
const HOSTILE_OKMS = 20;
const GOOD_OKMS = 5;
const ROUNDS = 20;
const ROUND_MS = 100;
/** From a good OKM's poll to its status reaching the good host, under the load of the test's own polls. */
const GOOD_LATENCY_BOUND_MS = 750;

/** The most answers of the server that were open at one time. */
function mostAtOnce(answers: readonly EndlessAnswer[]): number {
  const edges = answers.flatMap((answer) => [
    { at: answer.startedAt, change: 1 },
    { at: answer.closedAt ?? Infinity, change: -1 },
  ]);
  // At one instant a close counts before an open: a lane freed and taken again is one lane.
  edges.sort((a, b) => a.at - b.at || a.change - b.change);
  let open = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (open += edge.change));
  return most;
}

forEachDatabase('a subscriber whose answers never end holds only its own host\'s lanes', (kind) => {
  let subject: TestApp;
  let hostile: EndlessBodyServer;
  let good: Receiver;
  before(async () => {
    hostile = await EndlessBodyServer.start();
    good = await Receiver.start();
    subject = await buildTestApp(kind, {
      ...FAST_WEBHOOKS,
      WEBHOOK_TIMEOUT_MS: '5000',
      WEBHOOK_CONCURRENCY_PER_HOST: String(PER_HOST),
      WEBHOOK_CONCURRENCY: String(CONCURRENCY),
      // One retry, long after the test: each hostile OKM's failed attempt is its last here.
      WEBHOOK_RETRY_SCHEDULE: '10m',
    });
  });
  after(async () => {
    await subject.close();
    await hostile.close();
    await good.close();
  });

  async function subscribedOkms(count: number, url: string): Promise<string[]> {
    return Promise.all(
      Array.from({ length: count }, async () => {
        const serial = newSerial('LANE');
        await poll(subject, serial);
        await subscribe(subject.db, serial, [url]);
        return serial;
      }),
    );
  }

  for (const mode of ['endless', 'drip'] as const) {
    test(
      `${HOSTILE_OKMS} OKMs subscribed to a host answering 200 with ${mode === 'endless' ? 'an endless body' : 'a body that trickles without end'}: ` +
        `at most ${PER_HOST} of its answers at once, one failed attempt per OKM, and a good host's OKMs polling alongside have every status delivered within ${GOOD_LATENCY_BOUND_MS} ms`,
      async (t) => {
        hostile.status = 200;
        hostile.mode = mode;
        const hostilePath = `/hostile-${mode}`;
        const goodPath = `/good-${mode}`;
        const hostileSerials = await subscribedOkms(HOSTILE_OKMS, hostile.url(hostilePath));
        const goodSerials = await subscribedOkms(GOOD_OKMS, good.url(goodPath));

        // Every round each OKM polls, which queues a new status for each subscriber.
        for (let round = 0; round < ROUNDS; round++) {
          await Promise.all([...hostileSerials, ...goodSerials].map((serial) => poll(subject, serial)));
          await new Promise((resolve) => setTimeout(resolve, ROUND_MS));
        }

        const goodEvents = () => good.eventsAt(goodPath);
        const newestSyncOf = async (serial: string) =>
          Number((await subject.db.selectFrom('okm_polls').select('last_sync_time').where('serial_number', '=', serial).executeTakeFirstOrThrow()).last_sync_time);
        for (const serial of goodSerials) {
          const newest = new Date(await newestSyncOf(serial)).toISOString();
          await eventually(() => goodEvents().some((entry) => entry.event.data.serial_number === serial && entry.event.data.last_sync_time === newest), 5_000, `the newest status of ${serial}`);
        }
        const latencies = goodEvents().map((entry) => entry.receivedAt - Date.parse(String(entry.event.data.last_sync_time)));
        const hostileAnswers = hostile.answersAt(hostilePath);
        t.diagnostic(
          `good host: ${goodEvents().length} deliveries for ${GOOD_OKMS * ROUNDS} polls, slowest ${Math.max(...latencies)} ms from poll to delivery; ` +
            `hostile host: ${hostileAnswers.length} attempts, at most ${mostAtOnce(hostileAnswers)} at once`,
        );
        assert.ok(mostAtOnce(hostileAnswers) <= PER_HOST, `${mostAtOnce(hostileAnswers)} answers of the hostile host at once`);
        assert.ok(hostileAnswers.length <= HOSTILE_OKMS, `${hostileAnswers.length} attempts to the hostile host for ${HOSTILE_OKMS} OKMs`);
        assert.ok(Math.max(...latencies) < GOOD_LATENCY_BOUND_MS, `a good status took ${Math.max(...latencies)} ms from poll to delivery`);
        // Polls that come while a status is in flight coalesce; most are delivered one by one.
        assert.ok(goodEvents().length >= GOOD_OKMS * ROUNDS * 0.8, `${goodEvents().length} good deliveries for ${GOOD_OKMS * ROUNDS} polls`);
        const failed = await subject.db.selectFrom('status_delivery_failures').select(['status_code', 'error']).where('okm_serial', 'in', hostileSerials).execute();
        assert.ok(failed.length > 0 && failed.every((row) => row.status_code === 200), 'the hostile attempts are recorded as failed with their status');
      },
    );
  }
});
