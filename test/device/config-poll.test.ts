import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { freezeServerClock, newSerial, poll, SERVER_TIME } from './config-helpers.ts';

forEachDatabase('config call recording', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('an unknown serial number is inserted with no customer and answered 204 with no body', async () => {
    const serial = newSerial();

    const response = await poll(t, serial, { kasFirmware: '1.0.0' });

    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    const okm = await findOkm(t.db, serial);
    assert.equal(okm?.customerId, null);
    assert.equal(okm?.lastSyncTime, SERVER_TIME);
    assert.equal(okm?.firmwareVersion, '1.0.0');
  });

  test('the poll after the insert is answered with a correction', async () => {
    const serial = newSerial();
    await poll(t, serial);

    const response = await poll(t, serial);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { kasDateTime: SERVER_TIME });
  });

  test('two concurrent first polls of one serial number both succeed and make one OKM', async () => {
    const serial = newSerial();

    const responses = await Promise.all(Array.from({ length: 8 }, () => poll(t, serial)));

    assert.ok(responses.every((response) => response.statusCode === 204 || response.statusCode === 200), responses.map((r) => r.statusCode).join());
    assert.ok(responses.some((response) => response.statusCode === 204));
    const rows = await t.db.selectFrom('okms').select('serial_number').where('serial_number', '=', serial).execute();
    assert.equal(rows.length, 1);
  });

  test('every call records last sync time, last IP, firmware version and the reported values as sent', async () => {
    const serial = newSerial();
    await poll(t, serial);

    await poll(t, serial, { kasFirmware: '2.1.0', kasDateTime: 'abc', cacheMode: '0', pollingInterval: '60', somethingElse: 'x' });

    const okm = await findOkm(t.db, serial);
    assert.equal(okm?.lastSyncTime, SERVER_TIME);
    assert.equal(okm?.lastIp, '127.0.0.1');
    assert.equal(okm?.firmwareVersion, '2.1.0');
    assert.deepEqual(okm?.reported, { kasFirmware: '2.1.0', kasDateTime: 'abc', cacheMode: '0', pollingInterval: '60' });
  });

  test('reported values and the firmware version are stored cut to a bounded length', async () => {
    const serial = newSerial();

    await poll(t, serial, { kasFirmware: '9'.repeat(1000), configUrl: 'u'.repeat(1000) });

    const okm = await findOkm(t.db, serial);
    assert.equal(okm?.firmwareVersion, '9'.repeat(64));
    assert.equal(okm?.reported?.configUrl, 'u'.repeat(256));
  });

  test('a repeated parameter is stored as not reported', async () => {
    const serial = newSerial();

    await t.app.inject({ method: 'GET', url: `/api/v1/config/${serial}?cacheMode=1&cacheMode=2&retailCfg=2` });

    assert.deepEqual((await findOkm(t.db, serial))?.reported, { retailCfg: '2' });
  });

  test('a value is decoded escape by escape: a malformed escape stays as sent, bytes that are not UTF-8 become U+FFFD, and the poll is answered', async () => {
    const serial = newSerial();
    await poll(t, serial);

    const response = await t.app.inject({ method: 'GET', url: `/api/v1/config/${serial}?configUrl=%2Fa%41%zz&auditUrl=%ff%2F&kasFirmware=1.0+beta` });

    assert.equal(response.statusCode, 200);
    assert.deepEqual((await findOkm(t.db, serial))?.reported, { configUrl: '/aA%zz', auditUrl: '\uFFFD/', kasFirmware: '1.0 beta' });
  });

  test('an install code of 5 to 20 digits is stored, and anything else leaves the stored one', async () => {
    const serial = newSerial();
    await poll(t, serial, { installCode: '12345' });
    const stored = (await findOkm(t.db, serial))?.installCode;

    for (const installCode of ['1234', '1'.repeat(21), '12a45', '']) await poll(t, serial, { installCode });
    const afterInvalid = (await findOkm(t.db, serial))?.installCode;
    await poll(t, serial, { installCode: '9'.repeat(20) });

    assert.equal(stored, '12345');
    assert.equal(afterInvalid, '12345');
    assert.equal((await findOkm(t.db, serial))?.installCode, '9'.repeat(20));
  });

  test('X-Forwarded-For is ignored without TRUST_PROXY', async () => {
    const serial = newSerial();

    await poll(t, serial, {}, { 'x-forwarded-for': '203.0.113.9' });

    assert.equal((await findOkm(t.db, serial))?.lastIp, '127.0.0.1');
  });

  test('malformed parameters never give a 4xx', async () => {
    const serial = newSerial();
    await poll(t, serial);
    const queries = [
      'kasDateTime=abc',
      'pollingInterval=1e99',
      'cacheMode=[]',
      'cacheMode[]=1',
      'a=1&a=2',
      'kasDateTime=1&kasDateTime=2',
      'kasFirmware=%FF%FE',
      'retailCfg=-1&keyCheckoutWindowTime=99999999999999999999999',
      'assetList=&usersAssets=&auditUrl=',
      '%zz=1&kasFirmware',
      '__proto__=1&constructor=2',
    ];

    for (const query of queries) {
      const response = await t.app.inject({ method: 'GET', url: `/api/v1/config/${serial}?${query}` });

      assert.equal(response.statusCode, 200, query);
      assert.equal(typeof response.json(), 'object', query);
    }
  });

  test('a serial number that is too long, has a space or a non-ASCII letter is answered 400', async () => {
    for (const serial of ['a'.repeat(65), 'a%20b', '%C3%A4', 'a%2Fb']) {
      const response = await t.app.inject({ method: 'GET', url: `/api/v1/config/${serial}` });

      assert.equal(response.statusCode, 400, serial);
      assert.equal(response.json().error_code, 'BAD_REQUEST');
      assert.match(response.json().error_msg, /^serialNumber: /);
    }
  });

  test('serial numbers of 1 and 64 characters of every allowed kind are accepted', async () => {
    for (const serial of ['a', `Az09._-${'x'.repeat(57)}`]) {
      const response = await poll(t, serial);

      assert.equal(response.statusCode, 204, serial);
    }
  });

  test('a firmware version with control characters is answered normally and recorded as unknown', async () => {
    const serial = newSerial();
    await poll(t, serial);

    const response = await poll(t, serial, { kasFirmware: '1.0\u0000\u0007' });

    assert.equal(response.statusCode, 200);
    const okm = await findOkm(t.db, serial);
    assert.equal(okm?.firmwareVersion, null);
    assert.equal(okm?.reported?.kasFirmware, '1.0\u0000\u0007');
  });

  test('a polling interval stored out of range is answered clamped to 5–3600', async () => {
    const serial = newSerial();
    await poll(t, serial);
    await t.db.updateTable('okms').set({ polling_interval: 1 }).where('serial_number', '=', serial).execute();

    const response = await poll(t, serial, {
      kasDateTime: SERVER_TIME,
      cacheMode: 1,
      auditUrl: t.settings.auditUrl,
      pollingInterval: 1,
    });

    assert.deepEqual(response.json(), { pollingInterval: 5 });
  });

  describe('behind a trusted proxy', () => {
    let proxied: TestApp;
    before(async () => (proxied = await buildTestApp(kind, { TRUST_PROXY: 'true' })));
    after(() => proxied.close());

    test('with TRUST_PROXY=true, the forwarded address is recorded as last IP', async () => {
      const serial = newSerial();

      await poll(proxied, serial, {}, { 'x-forwarded-for': '203.0.113.9' });

      assert.equal((await findOkm(proxied.db, serial))?.lastIp, '203.0.113.9');
    });
  });
});
