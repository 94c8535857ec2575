import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial, poll } from '../device/config-helpers.ts';
import { FAST_WEBHOOKS, Receiver, subscribe } from './helpers.ts';
import { eventually } from '../helpers/eventually.ts';

forEachDatabase('status event delivery', (kind) => {
  let subject: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    subject = await buildTestApp(kind, FAST_WEBHOOKS);
  });
  after(async () => {
    await subject.close();
    await receiver.close();
  });

  /** An OKM that has polled once (enrolled) and now reports its status to the given receiver paths. */
  async function subscribedOkm(...paths: string[]): Promise<string> {
    const serial = newSerial('EVT');
    await poll(subject, serial);
    await subscribe(subject.db, serial, paths.map((path) => receiver.url(path)));
    return serial;
  }

  const queueRows = (serial: string) => subject.db.selectFrom('status_events').selectAll().where('okm_serial', '=', serial).orderBy('url').execute();
  const failures = (serial: string) =>
    subject.db.selectFrom('status_delivery_failures').selectAll().where('okm_serial', '=', serial).orderBy('id').execute();

  test('a poll queues a status event that is POSTed with the OKM status and Standard Webhooks headers', async () => {
    const serial = await subscribedOkm('/ok');

    const reply = await poll(subject, serial, { kasFirmware: '2.1.0' });

    assert.equal(reply.statusCode, 200);
    const [delivery] = await eventually(() => receiver.eventsAt('/ok').length === 1 && receiver.eventsAt('/ok'));
    assert.equal(delivery!.event.id, delivery!.headers['webhook-id']);
    assert.match(String(delivery!.headers['webhook-id']), /^msg_[0-9a-f]{32}$/);
    assert.match(String(delivery!.headers['webhook-timestamp']), /^\d{10}$/);
    assert.match(String(delivery!.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.equal(delivery!.headers['content-type'], 'application/json');
    assert.deepEqual(Object.keys(delivery!.event).sort(), ['data', 'id', 'timestamp', 'type']);
    assert.equal((delivery!.event as unknown as { type: string }).type, 'okm.status');
    assert.deepEqual(delivery!.event.data, {
      serial_number: serial,
      last_sync_time: (delivery!.event as unknown as { timestamp: string }).timestamp,
      last_ip: '127.0.0.1',
      firmware_version: '2.1.0',
    });
    const [row] = await eventually(async () => {
      const rows = await queueRows(serial);
      return rows[0]?.state === 'delivered' && rows;
    });
    assert.equal(row!.last_status_code, 200);
    assert.equal(row!.attempts, 0);
  });

  test('a 500 is retried with the same webhook-id and the event is then delivered', async () => {
    const serial = await subscribedOkm('/flaky');
    let calls = 0;
    receiver.reply = (event) => (event.path === '/flaky' && ++calls === 1 ? { status: 500 } : { status: 200 });

    await poll(subject, serial);

    const deliveries = await eventually(() => receiver.eventsAt('/flaky').length >= 2 && receiver.eventsAt('/flaky'));
    assert.equal(deliveries.length, 2);
    assert.equal(deliveries[0]!.headers['webhook-id'], deliveries[1]!.headers['webhook-id']);
    await eventually(async () => (await queueRows(serial))[0]?.state === 'delivered');
    const [failure] = await failures(serial);
    assert.equal(failure!.status_code, 500);
    assert.equal(failure!.outcome, 'retrying');
    assert.equal(failure!.attempt, 1);
    assert.equal(failure!.event_id, deliveries[0]!.headers['webhook-id']);
  });

  // How fast polls are answered is measured in bench/, not bounded here: a wall-clock bound flakes on a loaded machine.
  test('a receiver that never answers times out, and polls are answered meanwhile', async () => {
    const serial = await subscribedOkm('/hang');
    receiver.reply = (event) => (event.path === '/hang' ? { status: 200, hang: true } : { status: 200 });

    await poll(subject, serial);
    await eventually(() => receiver.eventsAt('/hang').length === 1);
    const replies = await Promise.all(Array.from({ length: 20 }, () => poll(subject, serial)));

    assert.ok(replies.every((reply) => reply.statusCode === 200));
    const [failure] = await eventually(async () => (await failures(serial)).length > 0 && failures(serial));
    assert.equal(failure!.status_code, null);
    assert.match(failure!.error, /no answer within 500 ms/);
  });

  test('a 301 is not followed and counts as a failed attempt', async () => {
    const serial = await subscribedOkm('/moved');
    receiver.reply = (event) => (event.path === '/moved' ? { status: 301, headers: { location: receiver.url('/moved-here') } } : { status: 200 });

    await poll(subject, serial);

    const [failure] = await eventually(async () => (await failures(serial)).length > 0 && failures(serial));
    assert.equal(failure!.status_code, 301);
    assert.match(failure!.error, /redirects are not followed/);
    assert.equal(receiver.eventsAt('/moved-here').length, 0);
  });

  test('a 410 stops deliveries to that URL: later polls queue nothing for it', async () => {
    const serial = await subscribedOkm('/gone', '/gone-witness');
    receiver.reply = (event) => (event.path === '/gone' ? { status: 410 } : { status: 200 });
    const goneRow = async () => (await queueRows(serial)).find((row) => row.url === receiver.url('/gone'));

    await poll(subject, serial);
    await eventually(async () => (await goneRow())?.state === 'gone');
    await poll(subject, serial);
    await poll(subject, serial, { kasFirmware: '9.9.9' });
    // The same polls' event to the other URL arriving is the sign that the dispatcher has had its turn.
    await eventually(() => receiver.eventsAt('/gone-witness').some((entry) => entry.event.data.firmware_version === '9.9.9'));

    assert.equal(receiver.eventsAt('/gone').length, 1);
    assert.equal((await goneRow())!.state, 'gone');
    assert.deepEqual((await failures(serial)).map((failure) => [failure.url, failure.outcome]), [[receiver.url('/gone'), 'gone']]);
  });

  test('Retry-After delays the next attempt beyond the retry schedule', async () => {
    const serial = await subscribedOkm('/busy');
    let calls = 0;
    receiver.reply = (event) => (event.path === '/busy' && ++calls === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 });

    await poll(subject, serial);

    const [first, second] = await eventually(() => receiver.eventsAt('/busy').length >= 2 && receiver.eventsAt('/busy'), 5000);
    assert.ok(second!.receivedAt - first!.receivedAt >= 1000, `retried after ${second!.receivedAt - first!.receivedAt} ms`);
  });

  test('the last failed attempt marks the delivery failed and keeps it in the log', async () => {
    const serial = await subscribedOkm('/down');
    receiver.reply = (event) => (event.path === '/down' ? { status: 503 } : { status: 200 });

    await poll(subject, serial);

    const [row] = await eventually(async () => (await queueRows(serial))[0]?.state === 'failed' && queueRows(serial));
    assert.equal(row!.attempts, 4);
    assert.equal(receiver.eventsAt('/down').length, 4);
    assert.deepEqual(
      (await failures(serial)).map((failure) => failure.outcome),
      ['retrying', 'retrying', 'retrying', 'failed'],
    );
  });

  test('100 polls while the receiver is down leave one pending event per URL; the one delivered carries the newest status', async () => {
    // Down answers ask for the next attempt in an hour, so the retry schedule cannot run out
    // during the polls; the test then brings the attempt forward, as if the hour had passed.
    let down = true;
    receiver.reply = (event) => (down && event.path.startsWith('/coalesce') ? { status: 503, headers: { 'retry-after': '3600' } } : { status: 200 });
    const serial = await subscribedOkm('/coalesce-a', '/coalesce-b');

    for (let index = 1; index <= 100; index++) await poll(subject, serial, { kasFirmware: `1.0.${index}` });
    const rows = await eventually(async () => {
      const current = await queueRows(serial);
      return current.length === 2 && current.every((row) => row.attempts >= 1 && row.claim_token === null) && current;
    });
    down = false;
    await subject.db.updateTable('status_events').set({ next_attempt_at: Date.now() }).where('okm_serial', '=', serial).execute();

    assert.ok(rows.every((row) => row.state === 'pending'));
    for (const path of ['/coalesce-a', '/coalesce-b']) {
      const delivered = await eventually(() => receiver.eventsAt(path).find((entry) => entry.status === 200));
      assert.equal(delivered.event.data.firmware_version, '1.0.100');
    }
    await eventually(async () => (await queueRows(serial)).every((row) => row.state === 'delivered'));
    // A later poll's event arriving is the sign that no second delivery of 1.0.100 was still on its way.
    await poll(subject, serial, { kasFirmware: '1.0.101' });
    for (const path of ['/coalesce-a', '/coalesce-b']) {
      await eventually(() => receiver.eventsAt(path).some((entry) => entry.event.data.firmware_version === '1.0.101'));
    }
    for (const path of ['/coalesce-a', '/coalesce-b']) {
      const delivered = receiver.eventsAt(path).filter((entry) => entry.status === 200).map((entry) => entry.event.data.firmware_version);
      assert.deepEqual(delivered, ['1.0.100', '1.0.101'], path);
    }
  });

  test('events to a hanging host do not hold up events to other hosts', async () => {
    const other = await Receiver.start();
    try {
      receiver.reply = (event) => (event.path === '/stuck' ? { status: 200, hang: true } : { status: 200 });
      const stuck = await Promise.all(Array.from({ length: 20 }, () => subscribedOkm('/stuck')));
      const serial = newSerial('EVT');
      await poll(subject, serial);
      await subscribe(subject.db, serial, [other.url('/fine')]);

      await Promise.all(stuck.map((okm) => poll(subject, okm)));
      await poll(subject, serial);

      await eventually(() => other.eventsAt('/fine').length === 1, FAST_TIMEOUT_MS - 100, 'delivery to the other host');
    } finally {
      await other.close();
    }
  });
});

const FAST_TIMEOUT_MS = Number(FAST_WEBHOOKS.WEBHOOK_TIMEOUT_MS);
