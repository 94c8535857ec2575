import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, addUrlRelease, call, createOkm, issueTokens, uniqueSerial, uniqueVersion, type Tokens } from './admin-helpers.ts';

const url = (n: number) => `https://hooks.example/${n}`;

/** Bodies that PUT refuses, and the start of the message that names the field. */
const INVALID_SETTINGS: [string, Record<string, unknown>, RegExp][] = [
  ['cache_mode 0', { cache_mode: 0 }, /^cache_mode: must be one of 1, 2$/],
  ['cache_mode 3', { cache_mode: 3 }, /^cache_mode: must be one of 1, 2$/],
  ['cache_mode as text', { cache_mode: '1' }, /^cache_mode: /],
  ['key_checkout_window without contact', { key_checkout_window: { time: 30 } }, /^key_checkout_window\.contact: required$/],
  ['key_checkout_window with another contact', { key_checkout_window: { time: 30, contact: 'ajar' } }, /^key_checkout_window\.contact: must be one of "open", "closed"$/],
  ['negative key_checkout_window time', { key_checkout_window: { time: -1, contact: 'open' } }, /^key_checkout_window\.time: must be >= 0$/],
  ['fractional key_checkout_window time', { key_checkout_window: { time: 1.5, contact: 'open' } }, /^key_checkout_window\.time: must be integer$/],
  ['unknown key_checkout_window member', { key_checkout_window: { time: 1, contact: 'open', colour: 'red' } }, /^key_checkout_window\.colour: unknown field$/],
  ['auditing_enabled as text', { auditing_enabled: 'true' }, /^auditing_enabled: must be boolean$/],
  ['asset id with a space', { asset_list: ['L1', 'L 2'] }, /^asset_list\[1\]: must match pattern/],
  ['asset id of 65 characters', { asset_list: ['a'.repeat(65)] }, /^asset_list\[0\]: must match pattern/],
  ['empty asset id', { asset_list: [''] }, /^asset_list\[0\]: must match pattern/],
  ['duplicate asset ids', { asset_list: ['L1', 'L1'] }, /^asset_list: must NOT have duplicate items/],
  ['asset list as an object', { asset_list: { L1: true } }, /^asset_list: must be array$/],
  ['user assets entry that is not an object', { users_assets: [{ user: 1 }, 7] }, /^users_assets\[1\]: must be object$/],
  ['too many user assets', { users_assets: Array.from({ length: 5001 }, () => ({})) }, /^users_assets: must NOT have more than 5000 items$/],
  ['polling_interval 4', { polling_interval: 4 }, /^polling_interval: must be >= 5$/],
  ['polling_interval 3601', { polling_interval: 3601 }, /^polling_interval: must be <= 3600$/],
  ['fractional polling_interval', { polling_interval: 60.5 }, /^polling_interval: must be integer$/],
  ['polling_interval as text', { polling_interval: '60' }, /^polling_interval: must be integer$/],
  ['malformed kas version', { firmware: { kas: '1.2.x' } }, /^firmware\.kas: must match pattern/],
  ['five-part version', { firmware: { batch_key: '1.2.3.4.5' } }, /^firmware\.batch_key: must match pattern/],
  ['kas version not in the catalog', { firmware: { kas: '77.0' } }, /^firmware\.kas: no kas release 77\.0 in the firmware catalog$/],
  ['unknown firmware kind', { firmware: { bootloader: '1.0' } }, /^firmware\.bootloader: unknown field$/],
  ['status URL with another scheme', { subscribe_urls: { status: ['ftp://hooks.example/x'] } }, /^subscribe_urls\.status\[0\]: must be an http or https URL$/],
  ['status URL that is no URL', { subscribe_urls: { status: ['not a url'] } }, /^subscribe_urls\.status\[0\]: must match format "uri"$/],
  ['duplicate status URLs', { subscribe_urls: { status: [url(1), url(1)] } }, /^subscribe_urls\.status: must NOT have duplicate items/],
  ['eleven status URLs', { subscribe_urls: { status: Array.from({ length: 11 }, (_, i) => url(i)) } }, /^subscribe_urls\.status: must NOT have more than 10 items$/],
  ['status URL longer than 2048', { subscribe_urls: { status: [`https://hooks.example/${'a'.repeat(2030)}`] } }, /^subscribe_urls\.status\[0\]: must NOT have more than 2048 characters$/],
  ['unknown subscribe_urls member', { subscribe_urls: { heartbeat: [] } }, /^subscribe_urls\.heartbeat: unknown field$/],
  ['unknown field', { colour: 'red' }, /^colour: unknown field$/],
  ['read-only serial_number', { serial_number: 'X' }, /^serial_number: read-only field$/],
  ['read-only customer', { customer: 'beta' }, /^customer: read-only field$/],
  ['read-only last_sync_time', { last_sync_time: null }, /^last_sync_time: read-only field$/],
  ['read-only effective_polling_interval', { effective_polling_interval: 60 }, /^effective_polling_interval: read-only field$/],
];

forEachDatabase('OKM admin API validation', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  const put = (serial: string, payload: unknown, headers: Record<string, string> = {}) =>
    call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload, headers });
  const patch = (serial: string, payload: unknown, headers: Record<string, string> = {}) =>
    call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload, headers });
  const stored = async (serial: string) => (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;

  describe('PUT refuses each invalid field with a 400 naming it, and writes nothing', () => {
    for (const [name, body, message] of INVALID_SETTINGS) {
      test(name, async () => {
        const serial = uniqueSerial();
        await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 77 });

        const response = await put(serial, { polling_interval: 99, ...body });

        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.json().error_code, 'BAD_REQUEST');
        assert.match(response.json().error_msg, message);
        assert.equal((await stored(serial)).polling_interval, 77);
      });
    }
  });

  test('PATCH refuses the same invalid fields as PUT', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    for (const [name, body, message] of INVALID_SETTINGS) {
      const response = await patch(serial, body);

      assert.equal(response.statusCode, 400, `${name}: ${response.body}`);
      assert.match(response.json().error_msg, message, name);
    }
  });

  test('polling_interval accepts the bounds 5 and 3600', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const lowest = await put(serial, { polling_interval: 5 });
    const highest = await put(serial, { polling_interval: 3600 });

    assert.equal(lowest.statusCode, 200);
    assert.equal(lowest.json().data.polling_interval, 5);
    assert.equal(highest.statusCode, 200);
    assert.equal(highest.json().data.polling_interval, 3600);
  });

  test('empty lists are configured lists, kept apart from null', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await put(serial, { asset_list: [], users_assets: [] });

    assert.deepEqual([response.json().data.asset_list, response.json().data.users_assets], [[], []]);
  });

  test('users_assets objects come back as they were sent', async () => {
    const usersAssets = [{ user_id: 7, assets: ['L1', 'L2'], nested: { deep: [null, true, 1.5] } }, {}];
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await put(serial, { users_assets: usersAssets });

    assert.deepEqual(response.json().data.users_assets, usersAssets);
  });

  test('a pin of a version that exists only for another kind is refused', async () => {
    const version = uniqueVersion();
    await addUrlRelease(t, tokens.admin, 'kas', version);
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await put(serial, { firmware: { wireless_key: version } });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^firmware\.wireless_key: no wireless_key release/);
  });

  test('a PUT that creates an OKM with an unknown pin leaves no OKM behind', async () => {
    const serial = uniqueSerial();

    const response = await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { polling_interval: 30, firmware: { kas: '66.6' } } });

    assert.equal(response.statusCode, 400);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 404);
  });

  test('a body that is not JSON is refused with 400', async () => {
    const response = await put(uniqueSerial(), '{"cache_mode": ', { 'content-type': 'application/json' });

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_code, 'BAD_REQUEST');
  });

  test('a JSON body that is not an object is refused with 400', async () => {
    const response = await put(uniqueSerial(), [1, 2]);

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'body: must be object');
  });

  test('a body of another content type is refused with 415', async () => {
    const response = await put(uniqueSerial(), 'cache_mode=1', { 'content-type': 'application/x-www-form-urlencoded' });

    assert.equal(response.statusCode, 415);
    assert.equal(response.json().error_code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('a body over 1 MiB is refused with 413', async () => {
    const response = await put(uniqueSerial(), { users_assets: [{ blob: 'x'.repeat(1024 * 1024) }] });

    assert.equal(response.statusCode, 413);
    assert.equal(response.json().error_code, 'PAYLOAD_TOO_LARGE');
  });

  test('a body with a __proto__ member is refused with 400', async () => {
    const response = await put(uniqueSerial(), '{"__proto__": {"polling_interval": 5}}', { 'content-type': 'application/json' });

    assert.equal(response.statusCode, 400);
  });

  test('a serial number outside 1–64 of A-Z a-z 0-9 . _ - is refused with 400', async () => {
    for (const serial of ['a'.repeat(65), 'bad%20serial', 'semi;colon']) {
      const response = await put(serial, {});

      assert.equal(response.statusCode, 400, serial);
      assert.match(response.json().error_msg, /^params\.serial: /);
    }
  });

  test('a message needs a type of 1–64 characters and no other fields', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    const cases: [unknown, RegExp][] = [
      [{}, /^type: required$/],
      [{ type: '' }, /^type: must NOT have fewer than 1 characters$/],
      [{ type: 'x'.repeat(65) }, /^type: must NOT have more than 64 characters$/],
      [{ type: 5 }, /^type: must be string$/],
      [{ type: 'x', colour: 'red' }, /^colour: unknown field$/],
    ];

    for (const [body, message] of cases) {
      const response = await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: body });

      assert.equal(response.statusCode, 400, JSON.stringify(body));
      assert.match(response.json().error_msg, message);
    }
  });

  test('a message payload over 64 KiB of JSON is refused with 400 and nothing is queued', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'POST', `${OKMS}/${serial}/messages`, {
      token: tokens.acmeWrite,
      payload: { type: 'big', payload: 'x'.repeat(64 * 1024) },
    });

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'payload: must be at most 65536 bytes of JSON');
    assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead })).json().data, []);
  });

  describe('a NUL character in free text is refused with a 400 naming the field, on every database', () => {
    test('the firmware_version filter of the list', async () => {
      const response = await call(t, 'GET', `${OKMS}?firmware_version=%00`, { token: tokens.acmeRead });

      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        error_code: 'BAD_REQUEST',
        error_msg: 'querystring.firmware_version: must not contain control characters or unpaired surrogates',
      });
    });

    test('the type of a message, and nothing is queued', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial);

      const response = await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'a\u0000b' } });

      assert.equal(response.statusCode, 400);
      assert.equal(response.json().error_msg, 'type: must not contain control characters or unpaired surrogates');
      assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead })).json().data, []);
    });

    test('the customer of an admin\'s list', async () => {
      const response = await call(t, 'GET', `${OKMS}?customer=%00`, { token: tokens.admin });

      assert.equal(response.statusCode, 400);
      assert.match(response.json().error_msg, /^querystring\.customer: must match pattern/);
    });

    test('the customer of an assignment, and the OKM keeps its customer', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial);

      const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: '\u0000' } });

      assert.equal(response.statusCode, 400);
      assert.match(response.json().error_msg, /^customer: must match pattern/);
      assert.equal((await stored(serial)).customer, 'acme');
    });
  });

  describe('JSON merge patch (RFC 7396)', () => {
    const FULL = {
      cache_mode: 2,
      key_checkout_window: { time: 30, contact: 'open' },
      auditing_enabled: true,
      asset_list: ['L1', 'L2'],
      users_assets: [{ user: 1 }],
      polling_interval: 60,
      subscribe_urls: { status: [url(1)] },
    };

    test('null removes a setting: it becomes unset (null, false or empty)', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, {
        cache_mode: null,
        key_checkout_window: null,
        auditing_enabled: null,
        asset_list: null,
        users_assets: null,
        polling_interval: null,
        subscribe_urls: null,
      });

      assert.equal(response.statusCode, 200);
      const record = response.json().data;
      assert.deepEqual(
        [record.cache_mode, record.key_checkout_window, record.auditing_enabled, record.asset_list, record.users_assets, record.polling_interval],
        [null, null, false, null, null, null],
      );
      assert.equal(record.effective_polling_interval, t.settings.fleetPollingInterval);
      assert.deepEqual(record.subscribe_urls, { status: [] });
    });

    test('members that the patch leaves out keep their values', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, { cache_mode: 1 });

      const { cache_mode, updated_at: _updated, created_at: _created, ...rest } = response.json().data;
      assert.equal(cache_mode, 1);
      assert.deepEqual(
        { ...FULL, cache_mode: 1 },
        Object.fromEntries(Object.entries({ ...rest, cache_mode }).filter(([name]) => name in FULL)),
      );
    });

    test('nested objects merge member by member', async () => {
      const serial = uniqueSerial();
      const [kas, batchKey] = [uniqueVersion(), uniqueVersion()];
      await addUrlRelease(t, tokens.admin, 'kas', kas);
      await addUrlRelease(t, tokens.admin, 'batch_key', batchKey);
      await createOkm(t, tokens.acmeWrite, serial, { ...FULL, firmware: { kas } });

      const response = await patch(serial, { key_checkout_window: { time: 45 }, firmware: { batch_key: batchKey } });

      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json().data.key_checkout_window, { time: 45, contact: 'open' });
      assert.deepEqual(response.json().data.firmware, { kas, batch_key: batchKey, wireless_key: null });
    });

    test('null inside a nested object removes only that member', async () => {
      const serial = uniqueSerial();
      const [kas, batchKey] = [uniqueVersion(), uniqueVersion()];
      await addUrlRelease(t, tokens.admin, 'kas', kas);
      await addUrlRelease(t, tokens.admin, 'batch_key', batchKey);
      await createOkm(t, tokens.acmeWrite, serial, { firmware: { kas, batch_key: batchKey } });

      const response = await patch(serial, { firmware: { kas: null } });

      assert.deepEqual(response.json().data.firmware, { kas: null, batch_key: batchKey, wireless_key: null });
    });

    test('arrays are replaced whole, not merged', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, { asset_list: ['L9'], subscribe_urls: { status: [url(2), url(3)] } });

      assert.deepEqual(response.json().data.asset_list, ['L9']);
      assert.deepEqual(response.json().data.subscribe_urls, { status: [url(2), url(3)] });
    });

    test('an empty patch changes nothing', async () => {
      const serial = uniqueSerial();
      const created = await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, {});

      assert.equal(response.statusCode, 200);
      const { updated_at: _a, ...after } = response.json().data;
      const { updated_at: _b, ...before } = created;
      assert.deepEqual(after, before);
    });

    test('the application/merge-patch+json content type is accepted', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, JSON.stringify({ polling_interval: 120 }), { 'content-type': 'application/merge-patch+json' });

      assert.equal(response.statusCode, 200);
      assert.equal(response.json().data.polling_interval, 120);
    });

    test('a merge patch body that is not JSON is refused with 400', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, '{polling_interval: 1', { 'content-type': 'application/merge-patch+json' });

      assert.equal(response.statusCode, 400);
    });

    test('a merge patch body in another charset (415) or not valid UTF-8 (400) is refused', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const latin1 = await patch(serial, JSON.stringify({ polling_interval: 30 }), { 'content-type': 'application/merge-patch+json; charset=latin1' });
      const notUtf8 = await patch(serial, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), { 'content-type': 'application/merge-patch+json' });

      assert.equal(latin1.statusCode, 415);
      assert.equal(notUtf8.statusCode, 400);
      assert.equal((await stored(serial)).polling_interval, 60);
    });

    test('a patch whose merged result is incomplete is refused, naming the missing member', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial);

      const response = await patch(serial, { key_checkout_window: { time: 45 } });

      assert.equal(response.statusCode, 400);
      assert.equal(response.json().error_msg, 'key_checkout_window.contact: required');
    });

    test('a refused patch changes nothing, even its valid members', async () => {
      const serial = uniqueSerial();
      await createOkm(t, tokens.acmeWrite, serial, FULL);

      const response = await patch(serial, { cache_mode: 1, firmware: { kas: '55.5' } });

      assert.equal(response.statusCode, 400);
      assert.equal((await stored(serial)).cache_mode, 2);
    });
  });
});
