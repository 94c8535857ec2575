import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, addUrlRelease, call, claim, createOkm, devicePoll, issueTokens, runFleetPass, setLastPoll, uniqueSerial, uniqueVersion, type Tokens } from './admin-helpers.ts';

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

forEachDatabase('OKM admin API routes', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  test('PUT by an admin naming a customer on a new serial number creates the OKM for that customer and answers 201 with the record', async () => {
    const serial = uniqueSerial();

    const response = await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, {
      token: tokens.admin,
      payload: { cache_mode: 2, polling_interval: 60, auditing_enabled: true, subscribe_urls: { status: ['https://hooks.example/okm'] } },
    });

    assert.equal(response.statusCode, 201);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    const body = response.json();
    assert.equal(body.message, 'Resource created successfully');
    const { created_at, updated_at, ...record } = body.data;
    assert.match(created_at, ISO_TIME);
    assert.match(updated_at, ISO_TIME);
    assert.deepEqual(record, {
      serial_number: serial,
      customer: 'acme',
      cache_mode: 2,
      key_checkout_window: null,
      auditing_enabled: true,
      asset_list: null,
      users_assets: null,
      polling_interval: 60,
      effective_polling_interval: 60,
      firmware: { kas: null, batch_key: null, wireless_key: null },
      subscribe_urls: { status: ['https://hooks.example/okm'] },
      acl_id: null,
      reported: null,
      install_code: null,
      last_sync_time: null,
      last_ip: null,
      last_correction: null,
      firmware_version: null,
      device_token_issued_at: null,
      state: 'never_polled',
      summary_state: 'never_polled',
      overdue: false,
      stuck: null,
    });
  });

  test('PUT on an existing OKM replaces its whole configuration and answers 200', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { cache_mode: 2, polling_interval: 60, asset_list: ['L1'] });

    const response = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { cache_mode: 1 } });

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().message, 'Resource updated successfully');
    const record = response.json().data;
    assert.equal(record.cache_mode, 1);
    assert.equal(record.polling_interval, null);
    assert.equal(record.effective_polling_interval, t.settings.fleetPollingInterval);
    assert.equal(record.asset_list, null);
  });

  test('PUT by a customer on an OKM that a poll inserted without a customer is a 409 and changes nothing', async () => {
    const serial = uniqueSerial();
    await devicePoll(t, serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 30 } });

    assert.equal(response.statusCode, 409);
    assert.deepEqual(response.json(), { error_code: 'CONFLICT', error_msg: `OKM ${serial} is not assigned to you; claim it with its installer code` });
    const stored = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin })).json().data;
    assert.deepEqual([stored.customer, stored.polling_interval], [null, null]);
  });

  test('PUT by an admin naming a customer on an OKM that a poll inserted without a customer gives it to that customer (201)', async () => {
    const serial = uniqueSerial();
    await devicePoll(t, serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { polling_interval: 30 } });

    assert.equal(response.statusCode, 201);
    assert.equal(response.json().data.customer, 'acme');
    assert.equal(response.json().data.polling_interval, 30);
  });

  test('PUT on a serial number that another customer holds answers 409 and changes nothing', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.betaWrite, serial, { polling_interval: 40 });

    const response = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 50 } });

    assert.equal(response.statusCode, 409);
    assert.deepEqual(response.json(), { error_code: 'CONFLICT', error_msg: `OKM ${serial} is not assigned to you; claim it with its installer code` });
    const stored = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite });
    assert.equal(stored.json().data.polling_interval, 40);
  });

  test('PUT by an admin without a customer creates an unassigned OKM', async () => {
    const serial = uniqueSerial();

    const response = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.admin, payload: {} });

    assert.equal(response.statusCode, 201);
    assert.equal(response.json().data.customer, null);
  });

  test('GET one OKM shows what the device last reported: sync time, IP, firmware, parameters, install code', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await devicePoll(t, serial, '?kasFirmware=3.1.4&installCode=123456&cacheMode=1');

    const response = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().message, 'Resource fetched successfully');
    const record = response.json().data;
    assert.match(record.last_sync_time, ISO_TIME);
    assert.equal(typeof record.last_ip, 'string');
    assert.equal(record.firmware_version, '3.1.4');
    assert.equal(record.install_code, '123456');
    assert.deepEqual(record.reported, { kasFirmware: '3.1.4', installCode: '123456', cacheMode: '1' });
    assert.equal(record.overdue, false);
  });

  test('an OKM that has not polled for three times its effective interval is overdue once a fleet pass has found it; one that never polled is not', async () => {
    const [late, punctual, never] = [uniqueSerial(), uniqueSerial(), uniqueSerial()];
    for (const serial of [late, punctual, never]) await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 10 });
    await setLastPoll(t, late, 31_000);
    await setLastPoll(t, punctual, 25_000);
    const overdueBeforePass = (await call(t, 'GET', `${OKMS}/${late}`, { token: tokens.acmeRead })).json().data.overdue;
    await runFleetPass(t);
    assert.equal(overdueBeforePass, false);

    const overdue = await Promise.all(
      [late, punctual, never].map(async (serial) => (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data.overdue),
    );

    assert.deepEqual(overdue, [true, false, false]);
  });

  test('GET of an OKM that does not exist answers 404 "OKM not found"', async () => {
    const response = await call(t, 'GET', `${OKMS}/${uniqueSerial()}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { error_code: 'NOT_FOUND', error_msg: 'OKM not found' });
  });

  test('PATCH merges into the configuration and answers 200 with the record', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { cache_mode: 2, polling_interval: 60 });

    const response = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 90 } });

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().message, 'Resource updated successfully');
    assert.equal(response.json().data.polling_interval, 90);
    assert.equal(response.json().data.cache_mode, 2);
  });

  test('DELETE removes the OKM with its messages and answers 204 without a body', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'note' } });

    const response = await call(t, 'DELETE', `${OKMS}/${serial}`, { token: tokens.acmeWrite });

    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 404);
    const messages = await t.db.selectFrom('okm_messages').selectAll().where('okm_serial', '=', serial).execute();
    assert.deepEqual(messages, []);
  });

  test('DELETE of an OKM that does not exist answers 404', async () => {
    const response = await call(t, 'DELETE', `${OKMS}/${uniqueSerial()}`, { token: tokens.acmeWrite });

    assert.equal(response.statusCode, 404);
  });

  test('POST a message queues it (201) and the device receives it on its next poll', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'POST', `${OKMS}/${serial}/messages`, {
      token: tokens.acmeWrite,
      payload: { type: 'delete-assets', payload: { reason: 'reset', list: [1, 2] } },
    });

    assert.equal(response.statusCode, 201);
    const { message, data } = response.json();
    assert.equal(message, 'Resource created successfully');
    assert.equal(data.type, 'delete-assets');
    assert.deepEqual(data.payload, { reason: 'reset', list: [1, 2] });
    assert.equal(data.delivered_at, null);
    const poll = await devicePoll(t, serial);
    assert.deepEqual(poll.json(), { message: { id: data.id, type: 'delete-assets', payload: { reason: 'reset', list: [1, 2] } } });
  });

  test('a message without a payload carries null', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'reboot' } });

    assert.equal(response.statusCode, 201);
    assert.equal(response.json().data.payload, null);
  });

  test('GET messages lists the history oldest first, with delivered_at once the device received one', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'first' } });
    await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'second' } });
    await devicePoll(t, serial);

    const response = await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    const { message, data } = response.json();
    assert.equal(message, 'Resource fetched successfully');
    assert.deepEqual(
      data.map((item: { type: string }) => item.type),
      ['first', 'second'],
    );
    assert.match(data[0].delivered_at, ISO_TIME);
    assert.equal(data[1].delivered_at, null);
  });

  test('GET audit lists the records the device sent, in the order they arrived, a page at a time', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    const intake = await t.app.inject({
      method: 'POST',
      url: `${t.settings.auditUrl}/${serial}`,
      payload: [{ event: 'a' }, { event: 'b' }, { event: 'c' }],
    });
    assert.ok(intake.statusCode < 300, `audit intake answered ${intake.statusCode} ${intake.body}`);

    const first = await call(t, 'GET', `${OKMS}/${serial}/audit?limit=2`, { token: tokens.acmeRead });
    const response = await call(t, 'GET', `${OKMS}/${serial}/audit?limit=2&cursor=${first.json().next_cursor}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    assert.deepEqual(first.json().data.map((entry: { record: unknown }) => entry.record), [{ event: 'a' }, { event: 'b' }]);
    const body = response.json();
    assert.equal(body.next_cursor, null);
    assert.equal(body.data.length, 1);
    assert.deepEqual(body.data[0].record, { event: 'c' });
    assert.match(body.data[0].received_at, ISO_TIME);
  });

  test('an OKM pins a catalog release of each kind', async () => {
    const serial = uniqueSerial();
    const [kas, batchKey, wirelessKey] = [uniqueVersion(), uniqueVersion(), uniqueVersion()];
    await addUrlRelease(t, tokens.admin, 'kas', kas);
    await addUrlRelease(t, tokens.admin, 'batch_key', batchKey);
    await addUrlRelease(t, tokens.admin, 'wireless_key', wirelessKey);

    const record = await createOkm(t, tokens.acmeWrite, serial, { firmware: { kas, batch_key: batchKey, wireless_key: wirelessKey } });

    assert.deepEqual(record.firmware, { kas, batch_key: batchKey, wireless_key: wirelessKey });
  });

  test('concurrent patches of different fields all apply: none is lost', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    const patches = [{ cache_mode: 2 }, { polling_interval: 45 }, { auditing_enabled: true }, { asset_list: ['L1'] }, { key_checkout_window: { time: 9, contact: 'closed' } }];

    const responses = await Promise.all(patches.map((payload) => call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload })));

    assert.deepEqual(
      responses.map((response) => response.statusCode),
      patches.map(() => 200),
    );
    const record = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;
    assert.deepEqual(
      [record.cache_mode, record.polling_interval, record.auditing_enabled, record.asset_list, record.key_checkout_window],
      [2, 45, true, ['L1'], { time: 9, contact: 'closed' }],
    );
  });

  test('two customers claiming one OKM at once with its installer code: one gets 200, the other 404', async () => {
    const serial = uniqueSerial();
    await devicePoll(t, serial, '?installCode=24681357');

    const responses = await Promise.all([tokens.acmeWrite, tokens.betaWrite].map((token) => claim(t, token, serial, '24681357')));

    assert.deepEqual(responses.map((response) => response.statusCode).sort(), [200, 404]);
  });

  test('an admin creating one serial number for two customers at once: one gets 201, the other 409', async () => {
    const serial = uniqueSerial();

    const responses = await Promise.all(
      ['acme', 'beta'].map((customer) => call(t, 'PUT', `${OKMS}/${serial}?customer=${customer}`, { token: tokens.admin, payload: {} })),
    );

    assert.deepEqual(responses.map((response) => response.statusCode).sort(), [201, 409]);
  });

  test('an admin\'s PUT for a customer racing the first poll of its device: both succeed and the customer owns the OKM', async () => {
    const serial = uniqueSerial();

    const [put] = await Promise.all([
      call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { polling_interval: 20 } }),
      devicePoll(t, serial),
    ]);

    assert.equal(put.statusCode, 201);
    const record = (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;
    assert.equal(record.customer, 'acme');
    assert.equal(record.polling_interval, 20);
  });
});
