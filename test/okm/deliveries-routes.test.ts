import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, createOkm, devicePoll, issueTokens, OKMS, uniqueSerial, type Tokens } from './admin-helpers.ts';
import { FAST_WEBHOOKS, Receiver } from '../webhooks/helpers.ts';
import { eventually } from '../helpers/eventually.ts';
import { cursorListContract, idKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';

forEachDatabase('delivery log and status event metrics', (kind) => {
  let subject: TestApp;
  let receiver: Receiver;
  let tokens: Tokens;
  before(async () => {
    receiver = await Receiver.start();
    // A path starting /fails-once answers 502 to its first request only.
    receiver.reply = (event) => (event.path.startsWith('/fails-once') && receiver.eventsAt(event.path).length === 1 ? { status: 502 } : { status: 200 });
    subject = await buildTestApp(kind, FAST_WEBHOOKS);
    tokens = await issueTokens(subject);
  });
  after(async () => {
    await subject.close();
    await receiver.close();
  });

  /** An acme OKM subscribed to the receiver's paths, polled once, with its events settled. */
  async function polledAcmeOkm(paths: string[]): Promise<string> {
    const serial = uniqueSerial('DLV');
    await createOkm(subject, tokens.acmeWrite, serial, { subscribe_urls: { status: paths.map((path) => receiver.url(path)) } });
    await devicePoll(subject, serial, '?kasFirmware=3.1.4');
    await eventually(async () => {
      const rows = await subject.db.selectFrom('status_events').select('state').where('okm_serial', '=', serial).execute();
      return rows.length === paths.length && rows.every((row) => row.state === 'delivered');
    });
    return serial;
  }

  test('GET …/deliveries shows each URL with its last attempt, and GET …/deliveries/failures the failed attempts with status codes', async () => {
    const serial = await polledAcmeOkm(['/fails-once', '/ok']);

    const response = await call(subject, 'GET', `${OKMS}/${serial}/deliveries`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    const { data } = response.json();
    assert.equal(data.queued_at, null, 'the status was passed on to the subscriptions');
    assert.deepEqual(
      data.subscriptions.map((entry: Record<string, unknown>) => [entry.url, entry.state, entry.attempts, entry.last_status_code, entry.next_attempt_at]),
      [
        [receiver.url('/fails-once'), 'delivered', 0, 200, null],
        [receiver.url('/ok'), 'delivered', 0, 200, null],
      ],
    );
    assert.deepEqual(Object.keys(data).sort(), ['queued_at', 'subscriptions']);
    const failures = await call(subject, 'GET', `${OKMS}/${serial}/deliveries/failures`, { token: tokens.acmeRead });
    assert.equal(failures.statusCode, 200);
    const [failure, ...more] = failures.json().data;
    assert.deepEqual([more, failures.json().next_cursor], [[], null]);
    assert.deepEqual(
      { ...failure, attempted_at: typeof failure.attempted_at, next_attempt_at: typeof failure.next_attempt_at },
      {
        url: receiver.url('/fails-once'),
        event_id: data.subscriptions[0].last_event_id,
        attempt: 1,
        attempted_at: 'string',
        status_code: 502,
        error: 'HTTP 502',
        outcome: 'retrying',
        next_attempt_at: 'string',
      },
    );
  });

  test("another customer's OKM is not found, and okm:read is required", async () => {
    const serial = await polledAcmeOkm(['/ok']);
    const noScope = await issueTestToken(subject, { customer: 'acme', scopes: ['okm:write'] });

    for (const path of ['deliveries', 'deliveries/failures']) {
      const asBeta = await call(subject, 'GET', `${OKMS}/${serial}/${path}`, { token: tokens.betaWrite });
      const unscoped = await call(subject, 'GET', `${OKMS}/${serial}/${path}`, { token: noScope });
      const asAdmin = await call(subject, 'GET', `${OKMS}/${serial}/${path}`, { token: tokens.admin });
      const missing = await call(subject, 'GET', `${OKMS}/NO-SUCH-OKM/${path}`, { token: tokens.admin });

      assert.equal(asBeta.statusCode, 404, path);
      assert.deepEqual(asBeta.json(), { error_code: 'NOT_FOUND', error_msg: 'OKM not found' });
      assert.equal(unscoped.statusCode, 403, path);
      assert.equal(asAdmin.statusCode, 200, path);
      assert.equal(missing.statusCode, 404, path);
    }
  });

  test('removing a URL from subscribe_urls drops its queued event', async () => {
    const serial = await polledAcmeOkm(['/ok', '/kept']);

    const response = await call(subject, 'PATCH', `${OKMS}/${serial}`, {
      token: tokens.acmeWrite,
      payload: { subscribe_urls: { status: [receiver.url('/kept')] } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });

    assert.equal(response.statusCode, 200);
    const rows = await subject.db.selectFrom('status_events').select('url').where('okm_serial', '=', serial).execute();
    assert.deepEqual(rows.map((row) => row.url), [receiver.url('/kept')]);
  });

  test('/metrics counts queued, delivered and failed status events and shows the queue depth', async () => {
    const counters = ['keyfleet_status_events_queued_total', 'keyfleet_status_events_delivered_total', 'keyfleet_status_event_attempts_failed_total'];
    const scrape = async () => (await subject.app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
    const before = await scrape();

    await polledAcmeOkm(['/fails-once-metrics']);
    const metrics = await scrape();

    // One event to one URL: queued once, failed once (502), then delivered.
    assert.deepEqual(
      Object.fromEntries(counters.map((name) => [name, value(metrics, name) - value(before, name)])),
      Object.fromEntries(counters.map((name) => [name, 1])),
    );
    assert.equal(value(metrics, 'keyfleet_status_events_queue_depth'), 0);
    assert.match(metrics, /^# TYPE keyfleet_status_events_failed_total counter$/m);
  });

  let okms = 0;
  describe('failed attempts, paged by cursor', () => {
    // Ids of their own, far above any the database hands out here: newest (highest) first.
    cursorListContract('GET /api/v1/okms/{serial}/deliveries/failures', async (): Promise<CursorListFixture> => {
      const serial = uniqueSerial('FAIL');
      await createOkm(subject, tokens.acmeWrite, serial);
      const base = 1_000_000 * ++okms;
      return {
        t: subject,
        url: `${OKMS}/${serial}/deliveries/failures`,
        token: tokens.acmeRead,
        keyOf: (failure) => Number(failure.event_id),
        keyAt: idKeyAt(base, 'desc'),
        add: async (ids) => {
          if (ids.length === 0) return;
          await subject.db
            .insertInto('status_delivery_failures')
            .values(ids.map((id) => ({ id: Number(id), okm_serial: serial, url: receiver.url('/down'), event_id: String(id), attempt: 1, attempted_at: 1, status_code: 503, error: 'HTTP 503', outcome: 'retrying', next_attempt_at: 2 })))
            .execute();
        },
        remove: async (id) => {
          await subject.db.deleteFrom('status_delivery_failures').where('id', '=', Number(id)).execute();
        },
      };
    });
  });
});
