import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { auditRecordCount, auditRecordsOf, newSerial } from './config-helpers.ts';

forEachDatabase('audit intake', (kind) => {
  let t: TestApp;
  let custom: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    custom = await buildTestApp(kind, { AUDIT_URL: '/kas/audit' });
  });
  after(async () => {
    await t.close();
    await custom.close();
  });

  async function knownOkm(app: TestApp = t): Promise<string> {
    const serial = newSerial();
    await insertOkm(app.db, serial, null, UNCONFIGURED_OKM, Date.now());
    return serial;
  }

  const post = (serial: string, payload: unknown, app: TestApp = t) =>
    app.app.inject({ method: 'POST', url: `${app.settings.auditUrl}/${serial}`, payload: JSON.stringify(payload), headers: { 'content-type': 'application/json' } });

  test('one record as a JSON object is stored and answered 201 with a count of 1', async () => {
    const serial = await knownOkm();

    const response = await post(serial, { event: 'key-out', user: 7 });

    assert.equal(response.statusCode, 201);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(response.json(), { count: 1 });
    assert.deepEqual(await auditRecordsOf(t.db, serial), [{ event: 'key-out', user: 7 }]);
  });

  test('an array is stored as one record per element, in order', async () => {
    const serial = await knownOkm();

    const response = await post(serial, [{ n: 1 }, { n: 2 }, 'free text']);

    assert.deepEqual(response.json(), { count: 3 });
    assert.deepEqual(await auditRecordsOf(t.db, serial), [{ n: 1 }, { n: 2 }, 'free text']);
  });

  test('later posts append to the earlier records', async () => {
    const serial = await knownOkm();

    await post(serial, { n: 1 });
    await post(serial, [{ n: 2 }]);

    assert.equal(await auditRecordCount(t.db, serial), 2);
  });

  test('an unknown serial number is answered 404 and nothing is stored', async () => {
    const serial = newSerial();

    const response = await post(serial, { n: 1 });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { error_code: 'NOT_FOUND', error_msg: 'OKM not found' });
  });

  test('a body that is not a JSON object or array is answered 400', async () => {
    const serial = await knownOkm();
    for (const payload of ['"text"', '42', 'null', '{not json']) {
      const response = await t.app.inject({ method: 'POST', url: `/api/v1/audit/${serial}`, payload, headers: { 'content-type': 'application/json' } });

      assert.equal(response.statusCode, 400, payload);
      assert.equal(response.json().error_code, 'BAD_REQUEST', payload);
    }
    assert.equal(await auditRecordCount(t.db, serial), 0);
  });

  test('a body over 1 MiB is answered 413 and nothing is stored', async () => {
    const serial = await knownOkm();

    const response = await post(serial, [{ filler: 'x'.repeat(1024 * 1024) }]);

    assert.equal(response.statusCode, 413);
    assert.equal(await auditRecordCount(t.db, serial), 0);
  });

  test('a body just under 1 MiB of small records is stored whole', async () => {
    const serial = await knownOkm();
    const records = Array.from({ length: 60_000 }, (_, n) => ({ n }));

    const response = await post(serial, records);

    assert.deepEqual(response.json(), { count: 60_000 });
    assert.equal(await auditRecordCount(t.db, serial), 60_000);
  });

  test('a bad serial number is answered 400', async () => {
    const response = await post('a%20b', { n: 1 });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^serialNumber: /);
  });

  test('with AUDIT_URL set, intake is served there', async () => {
    const serial = await knownOkm(custom);

    const response = await post(serial, { n: 1 }, custom);

    assert.equal(response.statusCode, 201);
    assert.equal((await custom.app.inject({ method: 'POST', url: `/api/v1/audit/${serial}`, payload: {} })).statusCode, 404);
  });
});
