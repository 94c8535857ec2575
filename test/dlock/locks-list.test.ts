import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, textKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const LOCKS = '/api/v1/locks';
const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';

forEachDatabase('DLock list for people (GET /api/v1/locks)', (kind) => {
  let t: TestApp;
  let acmeToken: string;
  let globexToken: string;
  const list = (token: string | undefined, query = '') =>
    t.app.inject({ method: 'GET', url: `${LOCKS}${query}`, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

  async function enrol(apiKey: string, serialNo: string, type: string, certificate: string) {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/dlock',
      headers: { authorization: `Bearer ${apiKey}` },
      payload: { serial_no: serialNo, type, certificate, enrolment_code: ENROLMENT_CODE, base64: false },
    });
    assert.equal(response.statusCode, 200, response.body);
  }

  before(async () => {
    t = await buildTestApp(kind);
    acmeToken = await issueTestToken(t, { customer: 'acme', scopes: ['lock:read'] });
    globexToken = await issueTestToken(t, { customer: 'globex', scopes: ['lock:read'] });
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'globex', name: 'globex-main' });
    const acmeKey = (await createApiKey(t.db, { customer: 'acme' })).key;
    const globexKey = (await createApiKey(t.db, { customer: 'globex' })).key;
    await enrol(acmeKey, 'LOCK-B', 'padlock', 'acme-main');
    await enrol(acmeKey, 'LOCK-A', 'cabinet', 'acme-main');
    await enrol(acmeKey, 'LOCK-C', 'padlock', 'acme-main');
    await enrol(globexKey, 'LOCK-G', 'door', 'globex-main');
  });
  after(() => t.close());

  test("a customer's token lists its enrolled locks by serial number, with type, certificate and enrolment time and no key material", async () => {
    const response = await list(acmeToken);

    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.next_cursor, null);
    assert.deepEqual(
      body.data.map((lock: { serial_no: string; type: string; certificate: string; customer: string }) => [lock.serial_no, lock.type, lock.certificate, lock.customer]),
      [
        ['LOCK-A', 'cabinet', 'acme-main', 'acme'],
        ['LOCK-B', 'padlock', 'acme-main', 'acme'],
        ['LOCK-C', 'padlock', 'acme-main', 'acme'],
      ],
    );
    assert.ok(body.data.every((lock: { enrolled_at: string }) => Math.abs(Date.parse(lock.enrolled_at) - Date.now()) < 60_000));
    assert.deepEqual(Object.keys(body.data[0]).sort(), ['certificate', 'customer', 'enrolled_at', 'serial_no', 'type']);
    assert.doesNotMatch(response.body, /"key"|signature|sealed/);
  });

  test('pages follow limit and cursor', async () => {
    const first = (await list(acmeToken, '?limit=2')).json();
    const second = (await list(acmeToken, `?limit=2&cursor=${first.next_cursor}`)).json();

    assert.deepEqual(first.data.map((lock: { serial_no: string }) => lock.serial_no), ['LOCK-A', 'LOCK-B']);
    assert.deepEqual(second.data.map((lock: { serial_no: string }) => lock.serial_no), ['LOCK-C']);
    assert.equal(second.next_cursor, null);
  });

  test("another customer sees only its own locks, and may not name the first", async () => {
    const body = (await list(globexToken)).json();

    assert.deepEqual(body.data.map((lock: { serial_no: string }) => lock.serial_no), ['LOCK-G']);
    assert.equal((await list(globexToken, '?customer=acme')).statusCode, 403);
  });

  test('an admin lists every customer\'s locks, or one customer\'s with ?customer=', async () => {
    const admin = await issueTestToken(t, { scopes: ['admin'] });

    assert.deepEqual((await list(admin)).json().data.map((lock: { serial_no: string }) => lock.serial_no), ['LOCK-A', 'LOCK-B', 'LOCK-C', 'LOCK-G']);
    assert.deepEqual((await list(admin, '?customer=globex')).json().data.map((lock: { serial_no: string }) => lock.serial_no), ['LOCK-G']);
  });

  test('the list needs lock:read and a valid query', async () => {
    const okmOnly = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });

    assert.equal((await list(undefined)).statusCode, 401);
    assert.equal((await list(okmOnly)).statusCode, 403);
    assert.equal((await list(acmeToken, '?limit=0')).statusCode, 400);
    assert.equal((await list(acmeToken, '?page=2')).statusCode, 400);
    assert.equal((await list(acmeToken, '?customer=bad%20name')).statusCode, 400);
  });

  let customers = 0;
  describe('paged by cursor', () => {
    // Rows stored as enrolment stores them, without the certificate work: the list reads the serial number, type, certificate name and time.
    cursorListContract('GET /api/v1/locks', async (): Promise<CursorListFixture> => {
      const name = `locks-${++customers}`;
      const token = await issueTestToken(t, { customer: name, scopes: ['lock:read'] });
      const customerId = (await findCustomerByName(t.db, name))!.id;
      return {
        t,
        url: LOCKS,
        token,
        keyOf: (lock) => lock.serial_no as string,
        keyAt: textKeyAt(`L${customers}-`),
        add: async (serials) => {
          if (serials.length === 0) return;
          await t.db
            .insertInto('dlocks')
            .values(serials.map((serial) => ({ serial_no: String(serial), customer_id: customerId, certificate_name: 'acme-main', certificate_json: '{"data":{"lock_type":"padlock"}}', key_sealed: 'x', created_at: 1 })))
            .execute();
        },
        remove: async (serial) => {
          await t.db.deleteFrom('dlocks').where('serial_no', '=', String(serial)).execute();
        },
      };
    });
  });
});
