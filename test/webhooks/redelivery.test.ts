import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { customerOwner } from '../../src/webhooks/secrets.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { addRelease, poll, type DeviceParameters } from '../device/config-helpers.ts';
import { call, createOkm, issueTokens, runFleetPass, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { ENDPOINTS, createFleetEndpoint, verifiedFleetEvents } from './fleet-event-helpers.ts';
import { FAST_WEBHOOKS, Receiver } from './helpers.ts';

const FAILING_ENDPOINTS = '/api/v1/fleet/failing-endpoints';

interface Delivery {
  id: number;
  event_id: string;
  event_type: string;
  serial_number: string | null;
  state: 'pending' | 'delivered' | 'failed' | 'gone';
  attempts: number;
  last_status_code: number | null;
}

forEachDatabase('webhook redelivery, payloads and failing endpoints', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let receiver: Receiver;
  before(async () => {
    receiver = await Receiver.start();
    t = await buildTestApp(kind, FAST_WEBHOOKS);
    tokens = await issueTokens(t);
    await addRelease(t.db, 'kas', '2.10.0', { fleetLatest: true });
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  let paths = 0;
  const endpoint = (token: string, eventTypes: string[]) => createFleetEndpoint(t, receiver, token, `/redeliver-${++paths}`, eventTypes);
  const acmeOwner = async () => customerOwner((await t.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow()).id);
  const deliveries = async (endpointId: number, token = tokens.acmeWrite): Promise<Delivery[]> => (await call(t, 'GET', `${ENDPOINTS}/${endpointId}/deliveries`, { token })).json().data;
  const settled = (endpointId: number, count: number) =>
    eventually(async () => {
      const log = await deliveries(endpointId);
      return log.length === count && log.every((delivery) => delivery.state !== 'pending') && log;
    });

  /** An endpoint whose test event was answered 410 (gone after one attempt); the receiver accepts everything afterwards. */
  async function goneDelivery(): Promise<{ endpoint: { id: number; path: string }; delivery: Delivery }> {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    receiver.reply = (event) => (event.path === subscribed.path ? { status: 410 } : { status: 200 });
    await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/test`, { token: tokens.acmeWrite });
    const [delivery] = await settled(subscribed.id, 1);
    receiver.reply = () => ({ status: 200 });
    assert.equal(delivery!.state, 'gone');
    return { endpoint: subscribed, delivery: delivery! };
  }

  test('a gone delivery redelivered is a new delivery of the same event: the receiver gets it signed with the same event id, and the original stays gone in the log', async () => {
    const { endpoint: subscribed, delivery: original } = await goneDelivery();

    const response = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${original.id}/redeliver`, { token: tokens.acmeWrite });

    assert.equal(response.statusCode, 202, response.body);
    const queued: Delivery = response.json().data;
    assert.notEqual(queued.id, original.id);
    assert.equal(queued.event_id, original.event_id);
    assert.equal(queued.event_type, 'webhook.test');
    assert.equal(queued.serial_number, null, 'a test event names no OKM');
    const events = await eventually(async () => {
      const received = await verifiedFleetEvents(t, receiver, subscribed.path, await acmeOwner());
      return received.length === 2 && received;
    });
    assert.deepEqual(
      events.map((event) => event.id),
      [original.event_id, original.event_id],
    );
    // The body is the original's, byte for byte: the same timestamp too.
    const bodies = receiver.eventsAt(subscribed.path).map((event) => event.body);
    assert.equal(bodies[1], bodies[0]);
    const log = await settled(subscribed.id, 2);
    assert.deepEqual(
      log.map((delivery) => [delivery.id, delivery.event_id, delivery.state]),
      [
        [queued.id, original.event_id, 'delivered'],
        [original.id, original.event_id, 'gone'],
      ],
    );
    await chainAllPendingEntries(t.db);
    const entry = await t.db.selectFrom('audit_entries').selectAll().where('action', '=', 'webhook_delivery.redelivered').where('entity_id', '=', String(subscribed.id)).executeTakeFirstOrThrow();
    assert.equal(entry.customer, 'acme');
    assert.deepEqual(JSON.parse(entry.after_json!), { delivery_id: original.id, redelivery_id: queued.id, event_id: original.event_id, event_type: 'webhook.test' });
  });

  test('a redelivery is refused with a 409 while a delivery of that event to the endpoint is pending, and is 404 for an unknown delivery or another customer', async () => {
    const { endpoint: subscribed, delivery: original } = await goneDelivery();
    // The redelivery is answered 500 and so retried: pending for a while.
    receiver.reply = (event) => (event.path === subscribed.path ? { status: 500 } : { status: 200 });
    const first = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${original.id}/redeliver`, { token: tokens.acmeWrite });
    assert.equal(first.statusCode, 202, first.body);
    const queued: Delivery = first.json().data;

    const again = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${original.id}/redeliver`, { token: tokens.acmeWrite });
    const ofPending = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${queued.id}/redeliver`, { token: tokens.acmeWrite });
    const unknown = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/999999999/redeliver`, { token: tokens.acmeWrite });
    const otherCustomer = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${original.id}/redeliver`, { token: tokens.betaWrite });
    const readOnly = await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${original.id}/redeliver`, { token: tokens.acmeRead });

    assert.equal(again.statusCode, 409, again.body);
    assert.equal(again.json().error_msg, `Event ${original.event_id} is already queued again for this endpoint (delivery ${queued.id})`);
    assert.equal(ofPending.statusCode, 409, ofPending.body);
    assert.match(ofPending.json().error_msg, new RegExp(`^Delivery ${queued.id} is still pending: it is retried by itself`));
    assert.equal(unknown.statusCode, 404, unknown.body);
    assert.equal(unknown.json().error_msg, `No delivery 999999999 of webhook endpoint ${subscribed.id}`);
    assert.equal(otherCustomer.statusCode, 404, otherCustomer.body);
    assert.equal(readOnly.statusCode, 403, readOnly.body);
    await settled(subscribed.id, 2);
    receiver.reply = () => ({ status: 200 });
    await chainAllPendingEntries(t.db);
    const entries = await t.db.selectFrom('audit_entries').select('seq').where('action', '=', 'webhook_delivery.redelivered').where('entity_id', '=', String(subscribed.id)).execute();
    assert.equal(entries.length, 1);
  });

  test("a delivery's payload is the body it sends, and an endpoint's delivery is 404 through another endpoint", async () => {
    const { endpoint: subscribed, delivery } = await goneDelivery();
    const other = await endpoint(tokens.acmeWrite, ['okm.overdue']);

    const response = await call(t, 'GET', `${ENDPOINTS}/${subscribed.id}/deliveries/${delivery.id}`, { token: tokens.acmeWrite });
    const elsewhere = await call(t, 'GET', `${ENDPOINTS}/${other.id}/deliveries/${delivery.id}`, { token: tokens.acmeWrite });
    const asBeta = await call(t, 'GET', `${ENDPOINTS}/${subscribed.id}/deliveries/${delivery.id}`, { token: tokens.betaWrite });

    assert.equal(response.statusCode, 200, response.body);
    const detail = response.json().data;
    const [sent] = receiver.eventsAt(subscribed.path);
    assert.deepEqual(detail.payload, JSON.parse(sent!.body));
    assert.deepEqual(detail.payload.data, { endpoint_id: subscribed.id, url: receiver.url(subscribed.path) });
    assert.equal(detail.id, delivery.id);
    assert.equal(detail.state, 'gone');
    assert.equal(elsewhere.statusCode, 404, elsewhere.body);
    assert.equal(asBeta.statusCode, 404, asBeta.body);
  });

  test('a payload holding members named like secrets (PIN hashes, signing secrets, tokens) reads them redacted, at any depth', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue']);
    const body = {
      id: 'msg_redaction',
      type: 'okm.overdue',
      timestamp: new Date().toISOString(),
      data: { serial_number: 'OKM-SECRET', users: [{ user_id: 7, pin_hash: '$argon2id$v=19$abc' }], endpoint: { secret: 'whsec_abc', url: 'https://x.example' }, device_token: 'okm_tok' },
    };
    const row = await t.db
      .insertInto('fleet_event_deliveries')
      .values({
        endpoint_id: subscribed.id,
        customer_id: null,
        url: 'https://x.example/',
        host: 'x.example',
        event_id: body.id,
        event_type: body.type,
        payload: JSON.stringify(body),
        state: 'failed',
        attempts: 4,
        next_attempt_at: Date.now(),
        created_at: Date.now(),
        last_attempt_at: Date.now(),
        last_error: 'HTTP 500',
        last_status_code: 500,
      })
      .returning('id')
      .executeTakeFirstOrThrow();

    const detail = (await call(t, 'GET', `${ENDPOINTS}/${subscribed.id}/deliveries/${row.id}`, { token: tokens.acmeWrite })).json().data;

    assert.deepEqual(detail.payload.data, {
      serial_number: 'OKM-SECRET',
      users: [{ user_id: 7, pin_hash: '[redacted]' }],
      endpoint: { secret: '[redacted]', url: 'https://x.example' },
      device_token: '[redacted]',
    });
    assert.equal(detail.serial_number, 'OKM-SECRET');
  });

  test('okm.overdue and okm.stuck deliveries name their OKM in the delivery log, as their payload does', async () => {
    const subscribed = await endpoint(tokens.acmeWrite, ['okm.overdue', 'okm.stuck']);
    const silent = uniqueSerial('RDO');
    await createOkm(t, tokens.acmeWrite, silent, { polling_interval: 60 });
    await poll(t, silent);
    await t.db.updateTable('okm_polls').set({ last_sync_time: Date.now() - 4 * 3_600_000 }).where('serial_number', '=', silent).execute();
    await runFleetPass(t);
    const stuck = uniqueSerial('RDS');
    await createOkm(t, tokens.acmeWrite, stuck);
    const ignoring = (): DeviceParameters => ({ kasFirmware: '2.10.0', kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: 300 });
    for (let index = 0; index < 3; index++) await poll(t, stuck, ignoring());

    const log = await settled(subscribed.id, 2);

    assert.deepEqual(log.map((delivery) => [delivery.event_type, delivery.serial_number]).sort(), [
      ['okm.overdue', silent],
      ['okm.stuck', stuck],
    ]);
    for (const delivery of log) {
      const detail = (await call(t, 'GET', `${ENDPOINTS}/${subscribed.id}/deliveries/${delivery.id}`, { token: tokens.acmeWrite })).json().data;
      assert.equal(detail.payload.data.serial_number, delivery.serial_number);
    }
  });

  test('an endpoint whose newest attempted delivery failed is listed as failing, to its customer and the admin, until a delivery there gets through', async () => {
    const { endpoint: subscribed, delivery } = await goneDelivery();
    const listed = async (token: string) => ((await call(t, 'GET', FAILING_ENDPOINTS, { token })).json().data as { id: number }[]).filter((entry) => entry.id === subscribed.id);

    const [failing] = await listed(tokens.acmeWrite);
    assert.deepEqual(
      { ...failing, last_attempt_at: typeof (failing as { last_attempt_at?: unknown }).last_attempt_at },
      {
        id: subscribed.id,
        url: receiver.url(subscribed.path),
        customer: 'acme',
        event_type: 'webhook.test',
        state: 'gone',
        attempts: 1,
        last_attempt_at: 'string',
        last_status_code: 410,
        last_error: 'HTTP 410: deliveries to this URL stopped',
      },
    );
    assert.equal((await listed(tokens.admin)).length, 1);
    assert.equal((await listed(tokens.betaWrite)).length, 0);
    assert.equal((await call(t, 'GET', FAILING_ENDPOINTS, { token: tokens.acmeRead })).statusCode, 403);

    await call(t, 'POST', `${ENDPOINTS}/${subscribed.id}/deliveries/${delivery.id}/redeliver`, { token: tokens.acmeWrite });
    await settled(subscribed.id, 2);

    assert.deepEqual(await listed(tokens.acmeWrite), []);
  });
});
