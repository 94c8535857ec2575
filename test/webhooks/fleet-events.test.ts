import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEPLOYMENT_OWNER, customerOwner } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { OKMS, call, createOkm, issueTokens, runFleetPass, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { poll } from '../device/config-helpers.ts';
import { ENDPOINTS, createFleetEndpoint, verifiedFleetEvents, type DeliveryLogEntry, type FleetEventBody } from './fleet-event-helpers.ts';
import { FAST_WEBHOOKS, Receiver, rebindingResolver } from './helpers.ts';

forEachDatabase('fleet events', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, FAST_WEBHOOKS);
    tokens = await issueTokens(t);
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  let paths = 0;
  /** Creates an endpoint at a new receiver path; returns its id and path. */
  const endpoint = (token: string, eventTypes: string[], query = '') => createFleetEndpoint(t, receiver, token, `/fleet-${++paths}`, eventTypes, query);

  const verifiedEvents = (path: string, owner: string) => verifiedFleetEvents(t, receiver, path, owner);

  const acmeOwner = async () => customerOwner((await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id);

  /** Makes the OKMs' silence longer than 3 of any polling interval (3600 s at most), as if they had stopped polling long ago. */
  const silence = (...serials: string[]) => t.db.updateTable('okm_polls').set({ last_sync_time: Date.now() - 4 * 3_600_000 }).where('serial_number', 'in', serials).execute();

  test('an endpoint is created, listed, read and deleted; afterwards it is 404', async () => {
    const created = await call(t, 'POST', ENDPOINTS, { token: tokens.acmeWrite, payload: { url: 'https://hooks.example/fleet', event_types: ['okm.overdue'] } });

    assert.equal(created.statusCode, 201, created.body);
    const record = created.json().data;
    assert.deepEqual({ ...record, id: 0, created_at: '' }, { id: 0, url: 'https://hooks.example/fleet', event_types: ['okm.overdue'], customer: 'acme', created_at: '' });
    const listed = await call(t, 'GET', ENDPOINTS, { token: tokens.acmeWrite });
    assert.ok(listed.json().data.some((item: { id: number }) => item.id === record.id));
    assert.deepEqual((await call(t, 'GET', `${ENDPOINTS}/${record.id}`, { token: tokens.acmeWrite })).json().data, record);
    assert.equal((await call(t, 'DELETE', `${ENDPOINTS}/${record.id}`, { token: tokens.acmeWrite })).statusCode, 204);
    const gone = await call(t, 'GET', `${ENDPOINTS}/${record.id}`, { token: tokens.acmeWrite });
    assert.equal(gone.statusCode, 404);
    assert.deepEqual(gone.json(), { error_code: 'NOT_FOUND', error_msg: `No webhook endpoint ${record.id}` });
  });

  test('invalid endpoints are refused with a 400 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ event_types: ['okm.overdue'] }, /^url: required$/],
      [{ url: 'ftp://hooks.example/x', event_types: ['okm.overdue'] }, /^url: must be an http or https URL$/],
      [{ url: 'http://127.0.0.1:9/x', event_types: ['okm.overdue'] }, /^url: private, loopback/],
      [{ url: 'https://hooks.example/x', event_types: [] }, /^event_types/],
      [{ url: 'https://hooks.example/x', event_types: ['okm.nonsense'] }, /^event_types\[0\]: must be one of "okm.enrolled", /],
      [{ url: 'https://hooks.example/x', event_types: ['okm.overdue', 'okm.overdue'] }, /^event_types/],
      [{ url: 'https://hooks.example/x', event_types: ['okm.pending'] }, /^event_types: okm.pending is only for deployment-wide endpoints/],
      [{ url: 'https://hooks.example/x', event_types: ['okm.overdue'], secret: 'x' }, /^secret: unknown field$/],
    ];
    const strict = await buildTestApp(kind);
    try {
      const acme = await issueTokens(strict);
      for (const [payload, message] of cases) {
        const response = await call(strict, 'POST', ENDPOINTS, { token: acme.acmeWrite, payload });

        assert.equal(response.statusCode, 400, JSON.stringify(payload));
        assert.match(response.json().error_msg, message, JSON.stringify(payload));
      }
    } finally {
      await strict.close();
    }
  });

  test('PATCH changes the url and event types it gives and keeps the rest; pending deliveries follow the new url, and the next events go by the new types', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    const moved = `/fleet-moved-${subscribed.id}`;
    receiver.reply = (event) => (event.path === subscribed.path ? { status: 503 } : { status: 200 });
    const queued = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });
    assert.equal(queued.statusCode, 202, queued.body);

    const urlOnly = await call(t, 'PATCH', `${ENDPOINTS}/${subscribed.id}`, { token: tokens.acmeWrite, payload: { url: receiver.url(moved) } });
    const typesOnly = await call(t, 'PATCH', `${ENDPOINTS}/${subscribed.id}`, {
      token: tokens.acmeWrite,
      payload: { event_types: ['okm.back_online'] },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    const nothing = await call(t, 'PATCH', `${ENDPOINTS}/${subscribed.id}`, { token: tokens.acmeWrite, payload: {} });

    assert.equal(urlOnly.statusCode, 200, urlOnly.body);
    assert.deepEqual([urlOnly.json().data.url, urlOnly.json().data.event_types], [receiver.url(moved), ['okm.overdue']]);
    assert.equal(typesOnly.statusCode, 200, typesOnly.body);
    assert.deepEqual(typesOnly.json().data, { ...urlOnly.json().data, event_types: ['okm.back_online'] });
    assert.deepEqual(nothing.json().data, typesOnly.json().data);
    const [testEvent] = await eventually(async () => {
      const received = await verifiedEvents(moved, await acmeOwner());
      return received.length === 1 && received;
    });
    assert.equal(testEvent!.id, queued.json().data.event_id);

    const serial = uniqueSerial('PATCHED');
    await createOkm(t, tokens.acmeWrite, serial);
    await poll(t, serial);
    await silence(serial);
    await runFleetPass(t);
    await poll(t, serial);
    const types = await eventually(async () => {
      const received = await verifiedEvents(moved, await acmeOwner());
      return received.length === 2 && received.map((event) => event.type);
    });
    assert.deepEqual(types, ['webhook.test', 'okm.back_online']);
    receiver.reply = () => ({ status: 200 });
  });

  test('PATCH refuses invalid fields with a 400 naming the field, and changes nothing', async () => {
    const own = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    const cases: [unknown, RegExp][] = [
      [{ url: 'ftp://hooks.example/x' }, /^url: must be an http or https URL$/],
      [{ url: null }, /^url: /],
      [{ event_types: [] }, /^event_types/],
      [{ event_types: ['okm.nonsense'] }, /^event_types\[0\]: must be one of "okm.enrolled", /],
      [{ event_types: ['okm.pending'] }, /^event_types: okm.pending is only for deployment-wide endpoints/],
      [{ customer: 'beta' }, /^customer: unknown field$/],
    ];
    for (const [payload, message] of cases) {
      const response = await call(t, 'PATCH', `${ENDPOINTS}/${own.id}`, { token: tokens.acmeWrite, payload });

      assert.equal(response.statusCode, 400, JSON.stringify(payload));
      assert.match(response.json().error_msg, message, JSON.stringify(payload));
    }
    const unchanged = (await call(t, 'GET', `${ENDPOINTS}/${own.id}`, { token: tokens.acmeWrite })).json().data;
    assert.deepEqual([unchanged.url, unchanged.event_types], [receiver.url(own.path), ['okm.overdue']]);
    const deploymentWide = await endpoint(tokens.admin, ['okm.enrolled']);
    const pending = await call(t, 'PATCH', `${ENDPOINTS}/${deploymentWide.id}`, { token: tokens.admin, payload: { event_types: ['okm.pending'] } });
    assert.deepEqual([pending.statusCode, pending.json().data.event_types], [200, ['okm.pending']]);
  });

  test("a customer sees only its own endpoints: another customer's are 404 for every call and missing from its list", async () => {
    const own = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    const calls: [string, string][] = [
      ['GET', `${ENDPOINTS}/${own.id}`],
      ['GET', `${ENDPOINTS}/${own.id}/deliveries`],
      ['POST', `${ENDPOINTS}/${own.id}/test`],
      ['PATCH', `${ENDPOINTS}/${own.id}`],
      ['DELETE', `${ENDPOINTS}/${own.id}`],
    ];
    const payloadOf = (method: string) => (method === 'PATCH' ? { payload: { url: 'https://hooks.example/taken-over', event_types: ['okm.enrolled'] } } : {});

    for (const [method, url] of calls) {
      const response = await call(t, method as 'GET', url, { token: tokens.betaWrite, ...payloadOf(method) });
      assert.equal(response.statusCode, 404, `${method} ${url}`);
      const asAdminForBeta = await call(t, method as 'GET', `${url}?customer=beta`, { token: tokens.admin, ...payloadOf(method) });
      assert.equal(asAdminForBeta.statusCode, 404, `admin for beta: ${method} ${url}`);
    }
    const unchanged = (await call(t, 'GET', `${ENDPOINTS}/${own.id}`, { token: tokens.acmeWrite })).json().data;
    assert.deepEqual([unchanged.url, unchanged.event_types], [receiver.url(own.path), ['okm.overdue']]);
    const betaList = await call(t, 'GET', ENDPOINTS, { token: tokens.betaWrite });
    assert.ok(!betaList.json().data.some((item: { id: number }) => item.id === own.id));
    assert.equal((await call(t, 'GET', `${ENDPOINTS}?customer=beta`, { token: tokens.acmeWrite })).statusCode, 403);
    assert.equal((await call(t, 'GET', ENDPOINTS, { token: tokens.acmeRead })).statusCode, 403);
    assert.equal((await call(t, 'GET', `${ENDPOINTS}/${own.id}`, { token: tokens.acmeWrite })).statusCode, 200);
  });

  test('an admin naming no customer creates a deployment-wide endpoint, which may take okm.pending', async () => {
    const response = await call(t, 'POST', ENDPOINTS, { token: tokens.admin, payload: { url: receiver.url('/admin-x'), event_types: ['okm.pending', 'okm.enrolled'] } });

    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.json().data.customer, null);
  });

  test('a new serial polling is okm.enrolled, delivered signed to a deployment-wide endpoint', async () => {
    const subscribed = await endpoint(tokens.admin, ['okm.enrolled']);
    const serial = uniqueSerial('ENR');

    assert.equal((await poll(t, serial, { kasFirmware: '2.0.0' })).statusCode, 204);

    const [event] = await eventually(async () => {
      const events = (await verifiedEvents(subscribed.path, DEPLOYMENT_OWNER)).filter((entry) => entry.data.serial_number === serial);
      return events.length > 0 && events;
    });
    assert.equal(event!.type, 'okm.enrolled');
    assert.deepEqual(Object.keys(event!).sort(), ['data', 'id', 'timestamp', 'type']);
    assert.equal(event!.data.firmware_version, '2.0.0');
  });

  test('an OKM silenced is okm.overdue once however often the fleet pass runs, then its next poll is okm.back_online; both signed with the customer secret', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue', 'okm.back_online']);
    const serial = uniqueSerial('SIL');
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 60 });
    await poll(t, serial);
    await silence(serial);

    await runFleetPass(t);
    await runFleetPass(t);
    await eventually(() => receiver.eventsAt(subscribed.path).length === 1);
    await poll(t, serial);
    // Polled just now: 3 × 60 s to go before the next pass would find it silent.
    await runFleetPass(t);

    const events = await eventually(async () => {
      const received = await verifiedEvents(subscribed.path, await acmeOwner());
      return received.length === 2 && received;
    });
    assert.deepEqual(
      events.map((event) => [event.type, event.data.serial_number]),
      [
        ['okm.overdue', serial],
        ['okm.back_online', serial],
      ],
    );
    const stored = await t.db.selectFrom('okms').select('overdue_at').where('serial_number', '=', serial).executeTakeFirstOrThrow();
    assert.equal(stored.overdue_at, null);
    const record = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeWrite });
    assert.equal(record.json().data.overdue, false);
  });

  test("an endpoint receives only its event types, and only its own customer's events", async () => {
    const backOnlineOnly = await endpoint(tokens.acmeWrite, ['okm.back_online']);
    const betaOverdue = await endpoint(tokens.betaWrite, ['okm.overdue']);
    const serial = uniqueSerial('FLT');
    await createOkm(t, tokens.acmeWrite, serial);
    await poll(t, serial);
    await silence(serial);

    await runFleetPass(t);
    await poll(t, serial);

    const [event] = await eventually(() => receiver.eventsAt(backOnlineOnly.path).length === 1 && receiver.eventsAt(backOnlineOnly.path));
    assert.equal((event!.event as unknown as FleetEventBody).type, 'okm.back_online');
    // The dispatcher has delivered what was queued after the overdue event: nothing went to beta.
    assert.equal(receiver.eventsAt(betaOverdue.path).length, 0);
    const betaRows = await t.db.selectFrom('fleet_event_deliveries').select('id').where('endpoint_id', '=', betaOverdue.id).execute();
    assert.deepEqual(betaRows, []);
  });

  test('the test action delivers a signed webhook.test event to that endpoint, and the delivery log shows it delivered', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);

    const response = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });

    assert.equal(response.statusCode, 202, response.body);
    const eventId = response.json().data.event_id;
    const [event] = await eventually(async () => {
      const received = await verifiedEvents(subscribed.path, await acmeOwner());
      return received.length === 1 && received;
    });
    assert.equal(event!.id, eventId);
    assert.equal(event!.type, 'webhook.test');
    const [delivery] = await eventually(async () => {
      const log = (await call(t, 'GET', `${ENDPOINTS}/${subscribed.id}/deliveries`, { token: tokens.acmeWrite })).json().data;
      return log[0]?.state === 'delivered' && log;
    });
    assert.equal(delivery.event_id, eventId);
    assert.equal(delivery.event_type, 'webhook.test');
    assert.equal(delivery.last_status_code, 200);
    assert.equal(delivery.attempts, 1);
  });

  /** The endpoint's delivery log, once `ready` accepts its newest delivery. */
  const deliveryLogWhen = (endpointId: number, ready: (newest: DeliveryLogEntry) => boolean, token = tokens.acmeWrite) =>
    eventually(async () => {
      const log: DeliveryLogEntry[] = (await call(t, 'GET', `${ENDPOINTS}/${endpointId}/deliveries`, { token })).json().data;
      return log[0] !== undefined && ready(log[0]) && log;
    });

  test('a fleet-event delivery answered 500 every time is retried by the schedule, then failed after the last retry: 4 attempts of one event, HTTP 500 in the log', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    receiver.reply = (event) => (event.path === subscribed.path ? { status: 500 } : { status: 200 });

    const queued = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });

    const [delivery] = await deliveryLogWhen(subscribed.id, (newest) => newest.state !== 'pending');
    assert.deepEqual(
      { state: delivery!.state, attempts: delivery!.attempts, next_attempt_at: delivery!.next_attempt_at, last_status_code: delivery!.last_status_code, last_error: delivery!.last_error },
      { state: 'failed', attempts: 4, next_attempt_at: null, last_status_code: 500, last_error: 'HTTP 500' },
    );
    const attempts = receiver.eventsAt(subscribed.path);
    assert.deepEqual(
      attempts.map((attempt) => attempt.headers['webhook-id']),
      Array(4).fill(queued.json().data.event_id),
    );
    receiver.reply = () => ({ status: 200 });
  });

  test('a fleet-event delivery answered 410 is gone after one attempt and never retried; the next event to that endpoint is still delivered', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    let answer = 410;
    receiver.reply = (event) => (event.path === subscribed.path ? { status: answer } : { status: 200 });

    await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });

    const [gone] = await deliveryLogWhen(subscribed.id, (newest) => newest.state !== 'pending');
    assert.deepEqual(
      { state: gone!.state, attempts: gone!.attempts, next_attempt_at: gone!.next_attempt_at, last_status_code: gone!.last_status_code, last_error: gone!.last_error },
      { state: 'gone', attempts: 1, next_attempt_at: null, last_status_code: 410, last_error: 'HTTP 410: deliveries to this URL stopped' },
    );
    // Three retry delays of FAST_WEBHOOKS and more: a retried delivery would have come back by now.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(receiver.eventsAt(subscribed.path).length, 1);
    answer = 200;
    await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });
    const log = await deliveryLogWhen(subscribed.id, (newest) => newest.state === 'delivered');
    assert.deepEqual(log.map((delivery) => delivery.state), ['delivered', 'gone']);
    receiver.reply = () => ({ status: 200 });
  });

  test('a fleet-event delivery answered 500 is pending for its next attempt, due by the retry schedule (±20 %), with the attempt counted', async () => {
    const patient = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_RETRY_SCHEDULE: '1h,1h' });
    try {
      const acme = await issueTokens(patient);
      const created = await call(patient, 'POST', ENDPOINTS, { token: acme.acmeWrite, payload: { url: receiver.url('/fleet-retried'), event_types: ['okm.overdue'] } });
      receiver.reply = (event) => (event.path === '/fleet-retried' ? { status: 500 } : { status: 200 });

      await call(patient, 'POST', `${ENDPOINTS}/${created.json().data.id}/test`, { token: acme.acmeWrite });

      const [delivery] = await eventually(async () => {
        const log: DeliveryLogEntry[] = (await call(patient, 'GET', `${ENDPOINTS}/${created.json().data.id}/deliveries`, { token: acme.acmeWrite })).json().data;
        return log[0]?.attempts === 1 && log;
      });
      assert.deepEqual(
        { state: delivery!.state, attempts: delivery!.attempts, last_status_code: delivery!.last_status_code, last_error: delivery!.last_error },
        { state: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500' },
      );
      const delay = Date.parse(delivery!.next_attempt_at!) - Date.parse(delivery!.last_attempt_at!);
      assert.ok(delay >= 0.8 * 3_600_000 - 1000 && delay <= 1.2 * 3_600_000, `next attempt ${delay} ms after the last`);
      assert.equal(receiver.eventsAt('/fleet-retried').length, 1);
    } finally {
      await patient.close();
      receiver.reply = () => ({ status: 200 });
    }
  });

  test('a status URL that exhausts its retries is subscriber.failing to the customer endpoint', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['subscriber.failing']);
    const serial = uniqueSerial('FAIL');
    const statusUrl = receiver.url('/always-500');
    receiver.reply = (event) => (event.path === '/always-500' ? { status: 500 } : { status: 200 });
    await createOkm(t, tokens.acmeWrite, serial, { subscribe_urls: { status: [statusUrl] } });

    await poll(t, serial);

    const [event] = await eventually(async () => {
      const received = await verifiedEvents(subscribed.path, await acmeOwner());
      return received.length === 1 && received;
    });
    assert.equal(event!.type, 'subscriber.failing');
    assert.equal(event!.data.serial_number, serial);
    assert.equal(event!.data.url, statusUrl);
    assert.equal(event!.data.attempts, 4);
    assert.equal(event!.data.last_error, 'HTTP 500');
  });

  test('subscriber.failing is sent once per URL while it keeps failing: 5 exhausted events to one URL are one event; after a delivery there succeeds, the next exhausted one is a second', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['subscriber.failing']);
    const statusPath = `/dedup-status-${subscribed.id}`;
    const statusUrl = receiver.url(statusPath);
    let statusAnswer = 500;
    receiver.reply = (event) => (event.path === statusPath ? { status: statusAnswer } : { status: 200 });
    const serials = Array.from({ length: 5 }, () => uniqueSerial('DEDUP'));
    for (const serial of serials) await createOkm(t, tokens.acmeWrite, serial, { subscribe_urls: { status: [statusUrl] } });
    const exhausted = async () =>
      Number((await t.db.selectFrom('status_delivery_failures').select((eb) => eb.fn.countAll<number | string>().as('n')).where('url', '=', statusUrl).where('outcome', '=', 'failed').executeTakeFirstOrThrow()).n);
    const reports = async () =>
      (await t.db.selectFrom('fleet_event_deliveries').select('payload').where('endpoint_id', '=', subscribed.id).where('event_type', '=', 'subscriber.failing').orderBy('id').execute()).map(
        (row) => (JSON.parse(row.payload) as FleetEventBody).data.serial_number,
      );
    const pollAndExhaust = async (serial: string, total: number) => {
      await poll(t, serial);
      await eventually(async () => (await exhausted()) === total);
    };

    for (const [index, serial] of serials.entries()) await pollAndExhaust(serial, index + 1);
    const whileFailing = await reports();
    statusAnswer = 200;
    await poll(t, serials[0]!);
    await eventually(async () => (await t.db.selectFrom('status_events').select('state').where('okm_serial', '=', serials[0]!).executeTakeFirst())?.state === 'delivered');
    statusAnswer = 500;
    await pollAndExhaust(serials[0]!, 6);
    await pollAndExhaust(serials[1]!, 7);

    assert.deepEqual(whileFailing, [serials[0]]);
    assert.deepEqual(await reports(), [serials[0], serials[0]], 'a second report after the success, and none more while it fails again');
    const delivered = await eventually(async () => {
      const received = await verifiedEvents(subscribed.path, await acmeOwner());
      return received.length === 2 && received;
    });
    assert.deepEqual(delivered.map((event) => [event.type, event.data.url]), [['subscriber.failing', statusUrl], ['subscriber.failing', statusUrl]]);
  });

  test('two passes of one process at once (its own and an operator\'s) mark each overdue OKM once: one okm.overdue per OKM', async () => {
    const subscribed = await endpoint(tokens.admin, ['okm.overdue']);
    const serials = Array.from({ length: 40 }, () => uniqueSerial('RACE'));
    for (const serial of serials) await poll(t, serial);
    await silence(...serials);

    const now = Date.now();
    const passes = await Promise.all([t.app.fleetPass.runPass({ now: () => now }), t.app.fleetPass.runPass({ now: () => now })]);

    assert.deepEqual(passes, [true, true]);
    const rows = await t.db
      .selectFrom('fleet_event_deliveries')
      .select('payload')
      .where('endpoint_id', '=', subscribed.id)
      .execute();
    const overdueSerials = rows.map((row) => (JSON.parse(row.payload) as FleetEventBody).data.serial_number as string).filter((serial) => serials.includes(serial));
    assert.deepEqual(overdueSerials.sort(), [...serials].sort());
  });
});

forEachDatabase('fleet events to private addresses', (kind) => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, { ...FAST_WEBHOOKS, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  test('a delivery to an endpoint whose host name resolves to 127.0.0.1 at connect time is refused, and the refusal is in its delivery log', async () => {
    const tokens = await issueTokens(t);
    const created = await call(t, 'POST', ENDPOINTS, { token: tokens.acmeWrite, payload: { url: `http://fleet-rebinding.test:${receiver.port}/private`, event_types: ['okm.overdue'] } });
    assert.equal(created.statusCode, 201, created.body);
    const resolver = rebindingResolver('fleet-rebinding.test');
    try {
      await call(t, 'POST', `${ENDPOINTS}/${created.json().data.id}/test`, { token: tokens.acmeWrite });

      const [delivery] = await eventually(async () => {
        const log: DeliveryLogEntry[] = (await call(t, 'GET', `${ENDPOINTS}/${created.json().data.id}/deliveries`, { token: tokens.acmeWrite })).json().data;
        return (log[0]?.attempts ?? 0) >= 1 && log;
      });
      assert.equal(delivery!.last_status_code, null);
      assert.match(delivery!.last_error!, /127\.0\.0\.1 is a private, loopback or link-local address/);
    } finally {
      resolver.mock.restore();
    }
    assert.ok(resolver.mock.callCount() >= 1, 'the guard resolved the name through the rebinding resolver');
    assert.equal(receiver.received.length, 0);
  });
});

forEachDatabase('fleet events of pending OKMs', (kind) => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, { ...FAST_WEBHOOKS, OKM_AUTO_ENROL: 'false' });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  test('an unknown serial calling while auto-enrol is off is okm.pending once, to the deployment-wide endpoint', async () => {
    const tokens = await issueTokens(t);
    const created = await call(t, 'POST', ENDPOINTS, { token: tokens.admin, payload: { url: receiver.url('/pending'), event_types: ['okm.pending'] } });
    assert.equal(created.statusCode, 201, created.body);
    const serial = uniqueSerial('PEND');

    await poll(t, serial);
    await poll(t, serial);

    const [delivery] = await eventually(() => receiver.eventsAt('/pending').length === 1 && receiver.eventsAt('/pending'));
    assert.equal((delivery!.event as unknown as FleetEventBody).type, 'okm.pending');
    assert.equal(delivery!.event.data.serial_number, serial);
    const rows = await t.db.selectFrom('fleet_event_deliveries').select('id').where('endpoint_id', '=', created.json().data.id).execute();
    assert.equal(rows.length, 1);
  });
});
