import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { deliveryLog, listDeliveryFailures } from '../../src/webhooks/delivery-log-repository.ts';
import { claimDueEvents, countPendingEvents, fanOutQueuedStatuses, recordAttempts, type ClaimedEvent } from '../../src/webhooks/queue-repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { subscribe } from './helpers.ts';

const URL_A = 'http://receiver-a.example/events';
const URL_B = 'http://receiver-b.example/events';

forEachDatabase('status event queue', (kind) => {
  let subject: TestApp;
  before(async () => {
    // No dispatcher: the test fans out itself.
    subject = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
  });
  after(() => subject.close());

  const queuedAt = async (serial: string) =>
    (await subject.db.selectFrom('okm_polls').select('status_queued_at').where('serial_number', '=', serial).executeTakeFirstOrThrow()).status_queued_at;
  const queueRows = (serial: string) => subject.db.selectFrom('status_events').selectAll().where('okm_serial', '=', serial).orderBy('url').execute();
  /** Fans out every marked OKM. */
  const fanOutAll = async () => {
    while ((await fanOutQueuedStatuses(subject.db, subject.dialect, 1000)).fannedOut > 0);
  };

  async function subscribedOkm(urls: string[]): Promise<string> {
    const serial = newSerial('QUEUE');
    await poll(subject, serial);
    await subscribe(subject.db, serial, urls);
    return serial;
  }

  test('a poll of an OKM with subscriber URLs marks it queued, and later polls keep the first mark', async () => {
    const serial = await subscribedOkm([URL_A, URL_B]);

    await poll(subject, serial);
    const first = await queuedAt(serial);
    await poll(subject, serial);

    assert.notEqual(first, null);
    assert.equal(await queuedAt(serial), first);
    assert.deepEqual(await queueRows(serial), [], 'the poll itself writes no queue rows');
    assert.equal((await deliveryLog(subject.db, serial)).queuedAt, Number(first));
  });

  test('a poll of an OKM without subscriber URLs leaves it unmarked', async () => {
    const serial = await subscribedOkm([]);

    await poll(subject, serial);

    assert.equal(await queuedAt(serial), null);
  });

  test('a fan-out makes one pending row per URL, due at once, and clears the mark', async () => {
    const serial = await subscribedOkm([URL_A, URL_B]);
    await poll(subject, serial);
    const before = Date.now();

    await fanOutAll();

    const rows = await queueRows(serial);
    assert.deepEqual(
      rows.map((row) => [row.url, row.host, row.state, row.attempts]),
      [
        [URL_A, 'receiver-a.example', 'pending', 0],
        [URL_B, 'receiver-b.example', 'pending', 0],
      ],
    );
    for (const row of rows) assert.ok(Number(row.next_attempt_at) >= before && Number(row.next_attempt_at) <= Date.now());
    assert.equal(await queuedAt(serial), null);
    assert.equal((await deliveryLog(subject.db, serial)).queuedAt, null);
  });

  test('a fan-out makes a delivered or failed row pending again, leaves a pending row as it is and a stopped (410) URL stopped', async () => {
    const serial = await subscribedOkm(['http://a.example/', 'http://b.example/', 'http://c.example/', 'http://d.example/']);
    await poll(subject, serial);
    await fanOutAll();
    const later = Date.now() + 3_600_000;
    const setState = (url: string, state: 'delivered' | 'failed' | 'pending' | 'gone') =>
      subject.db.updateTable('status_events').set({ state, attempts: 3, next_attempt_at: later }).where('okm_serial', '=', serial).where('url', '=', url).execute();
    await setState('http://a.example/', 'delivered');
    await setState('http://b.example/', 'failed');
    await setState('http://c.example/', 'pending');
    await setState('http://d.example/', 'gone');

    await poll(subject, serial);
    await fanOutAll();

    const rows = await queueRows(serial);
    assert.deepEqual(
      rows.map((row) => [row.url, row.state, row.attempts, Number(row.next_attempt_at) === later]),
      [
        ['http://a.example/', 'pending', 0, false],
        ['http://b.example/', 'pending', 0, false],
        ['http://c.example/', 'pending', 3, true],
        ['http://d.example/', 'gone', 3, true],
      ],
    );
  });

  test('a fan-out takes at most its limit of OKMs, the longest queued first', async () => {
    await fanOutAll();
    const serials = [await subscribedOkm([URL_A]), await subscribedOkm([URL_A]), await subscribedOkm([URL_A])];
    for (const [index, serial] of serials.entries()) {
      await subject.db.updateTable('okm_polls').set({ status_queued_at: 1_000 - index }).where('serial_number', '=', serial).execute();
    }

    const { fannedOut: taken } = await fanOutQueuedStatuses(subject.db, subject.dialect, 2);

    assert.equal(taken, 2);
    assert.deepEqual(
      await Promise.all(serials.map(async (serial) => [(await queueRows(serial)).length, await queuedAt(serial)])),
      [
        [0, 1_000],
        [1, null],
        [1, null],
      ],
    );
  });

  test('when a fan-out claims, the rows it writes are claimed with the lease asked for each host and returned with the OKM status; a row left pending is neither', async () => {
    await fanOutAll();
    const fresh = await subscribedOkm([URL_A, URL_B]);
    const stillPending = await subscribedOkm([URL_A]);
    await poll(subject, stillPending);
    await fanOutAll();
    await poll(subject, fresh);
    await poll(subject, stillPending);
    const asked: string[] = [];
    const now = Date.now();

    const { fannedOut, claimed } = await fanOutQueuedStatuses(subject.db, subject.dialect, 1000, now, (host) => {
      asked.push(host);
      return host === 'receiver-b.example' ? undefined : { token: 'fan-out-token', claimedUntil: now + asked.length };
    });

    assert.equal(fannedOut, 2);
    assert.deepEqual(asked.sort(), ['receiver-a.example', 'receiver-a.example', 'receiver-b.example']);
    assert.deepEqual(
      claimed.map(({ okmSerial, url, host, attempts, kind }) => ({ okmSerial, url, host, attempts, kind })),
      [{ okmSerial: fresh, url: URL_A, host: 'receiver-a.example', attempts: 0, kind: 'status' }],
    );
    const okm = await subject.db.selectFrom('okm_polls').select(['last_sync_time', 'last_ip']).where('serial_number', '=', fresh).executeTakeFirstOrThrow();
    assert.equal(claimed[0]!.lastSyncTime, Number(okm.last_sync_time));
    assert.equal(claimed[0]!.lastIp, okm.last_ip);
    assert.match(claimed[0]!.eventId, /^msg_[0-9a-f]{32}$/);
    const rows = async (serial: string) => (await queueRows(serial)).map(({ url, state, claim_token }) => ({ url, state, claim_token }));
    assert.deepEqual(await rows(fresh), [
      { url: URL_A, state: 'pending', claim_token: 'fan-out-token' },
      { url: URL_B, state: 'pending', claim_token: null },
    ]);
    assert.deepEqual(await rows(stillPending), [{ url: URL_A, state: 'pending', claim_token: null }], 'a pending row is left as it is, unclaimed');
    const lease = Number((await queueRows(fresh))[0]!.claimed_until);
    assert.ok(lease > now && lease <= now + asked.length, `the lease ${lease - now} ms after now is one the callback gave`);
  });

  test('the queue depth counts the pending rows and the OKMs whose status is not fanned out yet', async () => {
    await fanOutAll();
    const base = await countPendingEvents(subject.db);
    const fannedOut = await subscribedOkm([URL_A, URL_B]);
    await poll(subject, fannedOut);
    await fanOutAll();
    const marked = await subscribedOkm([URL_A, URL_B]);

    await poll(subject, marked);

    assert.equal(await countPendingEvents(subject.db), base + 2 + 1);
  });

  test('outcomes written in one batch: delivered, delivered while the OKM polled again (pending), a lapsed claim (untouched), a retry (logged)', async () => {
    const claimOne = async (label: string): Promise<ClaimedEvent> => {
      const serial = await subscribedOkm([`http://${label}.batch.example/events`]);
      await poll(subject, serial);
      await fanOutAll();
      const [event] = await claimDueEvents(subject.db, subject.dialect, { host: `${label}.batch.example`, now: Date.now(), limit: 10, token: 'batch-token', claimedUntil: Date.now() + 60_000 });
      return event!;
    };
    const [delivered, polledAgain, lapsed, retrying] = [await claimOne('delivered'), await claimOne('polled-again'), await claimOne('lapsed'), await claimOne('retrying')];
    await poll(subject, polledAgain.okmSerial);
    const attemptedAt = Date.now();

    await recordAttempts(subject.db, subject.dialect, [
      { event: delivered, token: 'batch-token', attemptedAt, outcome: { kind: 'delivered', statusCode: 204 } },
      { event: polledAgain, token: 'batch-token', attemptedAt, outcome: { kind: 'delivered', statusCode: 200 } },
      { event: lapsed, token: 'an-earlier-claim', attemptedAt, outcome: { kind: 'delivered', statusCode: 204 } },
      { event: retrying, token: 'batch-token', attemptedAt, outcome: { kind: 'retrying', statusCode: 500, error: 'HTTP 500', nextAttemptAt: attemptedAt + 5_000 } },
    ]);

    const row = async (event: ClaimedEvent) => (await queueRows(event.okmSerial))[0]!;
    const summary = async (event: ClaimedEvent) => {
      const { state, attempts, claim_token, last_status_code, last_event_id, delivered_at, next_attempt_at } = await row(event);
      return { state, attempts, claim_token, last_status_code, last_event_id, delivered_at: delivered_at === null ? null : Number(delivered_at), next_attempt_at: Number(next_attempt_at) };
    };
    assert.deepEqual(await summary(delivered), { state: 'delivered', attempts: 0, claim_token: null, last_status_code: 204, last_event_id: delivered.eventId, delivered_at: attemptedAt, next_attempt_at: attemptedAt });
    assert.deepEqual(await summary(polledAgain), { state: 'pending', attempts: 0, claim_token: null, last_status_code: 200, last_event_id: polledAgain.eventId, delivered_at: attemptedAt, next_attempt_at: attemptedAt });
    assert.deepEqual({ ...(await summary(lapsed)), next_attempt_at: undefined }, { state: 'pending', attempts: 0, claim_token: 'batch-token', last_status_code: null, last_event_id: null, delivered_at: null, next_attempt_at: undefined });
    assert.deepEqual(await summary(retrying), { state: 'pending', attempts: 1, claim_token: null, last_status_code: 500, last_event_id: retrying.eventId, delivered_at: null, next_attempt_at: attemptedAt + 5_000 });
    assert.deepEqual(
      (await listDeliveryFailures(subject.db, retrying.okmSerial, { after: undefined, limit: 10 })).items.map((failure) => [failure.attempt, failure.status_code, failure.outcome]),
      [[1, 500, 'retrying']],
    );
  });

  /**
   * Runs `hold` in a transaction on another connection and keeps that transaction open (its row
   * locks held) until `release` is called; resolves once `hold` has run.
   */
  async function holdInAnotherTransaction(hold: (tx: Db) => Promise<unknown>): Promise<{ release(): Promise<void> }> {
    const other = openDatabase(dialectFor(subject.settings));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const holder = other.db.transaction().execute(async (tx) => {
      await hold(tx);
      held();
      await released;
    });
    await Promise.race([holding, holder]);
    return {
      async release() {
        release();
        await holder;
        await other.db.destroy();
      },
    };
  }

  if (kind === 'postgres') {
    test('an OKM held by a fan-out (its poll row) does not hold up recording a failed attempt for it (no deadlock with the outcome writes)', async () => {
      const serial = await subscribedOkm([URL_A]);
      const fanOut = await holdInAnotherTransaction((tx) =>
        subject.dialect.skipRowsClaimedByOthers(tx.selectFrom('okm_polls').select('serial_number').where('serial_number', '=', serial)).execute(),
      );
      try {
        // The failure row references the OKM: its foreign-key check locks the OKM's key.
        await subject.db.transaction().execute(async (tx) => {
          await sql`set local lock_timeout = '2s'`.execute(tx);
          await tx
            .insertInto('status_delivery_failures')
            .values({ okm_serial: serial, url: URL_A, event_id: 'msg_test', attempt: 1, attempted_at: Date.now(), status_code: 503, error: 'HTTP 503', outcome: 'retrying', next_attempt_at: null })
            .execute();
        });
      } finally {
        await fanOut.release();
      }
    });

    test('a fan-out skips an OKM whose poll row another transaction holds (a poll), and takes it once it is free', async () => {
      await fanOutAll();
      const serial = await subscribedOkm([URL_A]);
      await poll(subject, serial);
      const poller = await holdInAnotherTransaction((tx) => tx.updateTable('okm_polls').set({ last_ip: '192.0.2.9' }).where('serial_number', '=', serial).execute());
      let skippedWhileHeld: number;
      try {
        skippedWhileHeld = (await fanOutQueuedStatuses(subject.db, subject.dialect, 10)).fannedOut;
      } finally {
        await poller.release();
      }

      const { fannedOut: takenOnceFree } = await fanOutQueuedStatuses(subject.db, subject.dialect, 10);

      assert.equal(skippedWhileHeld, 0);
      assert.equal(takenOnceFree, 1);
      assert.equal((await queueRows(serial)).length, 1);
    });
  }
});
