import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { parseCsv } from '../helpers/csv.ts';
import { call, issueTokens, OKMS, setLastPoll, uniqueSerial, type Tokens } from './admin-helpers.ts';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-01T00:00:00.000Z');

forEachDatabase("an OKM's audit records newest first, in a time window, and as CSV", (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let serial: string;
  let ids: number[];
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
    serial = uniqueSerial('AUD');
    await insertOkm(t.db, serial, (await findCustomerByName(t.db, 'acme'))!.id, UNCONFIGURED_OKM, Date.now());
    // Four records, one a day; the last holds a cell a spreadsheet would run as a formula.
    const records = ['{"event":"open","door":1}', '{"event":"close"}', '"plain"', '"=HYPERLINK(\\"http://evil\\")"'];
    for (const [day, record] of records.entries()) {
      await t.db.insertInto('okm_audit_records').values({ okm_serial: serial, received_at: T0 + day * DAY, record }).execute();
    }
    ids = (await t.db.selectFrom('okm_audit_records').select('id').where('okm_serial', '=', serial).orderBy('id').execute()).map((row) => Number(row.id));
  });
  after(() => t.close());

  const listed = async (query: string, token = tokens.acmeRead) => {
    const response = await call(t, 'GET', `${OKMS}/${serial}/audit${query}`, { token });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { data: { id: number; received_at: string; record: unknown }[]; next_cursor: string | null };
  };

  test('without order the records come in arrival order, as before', async () => {
    assert.deepEqual((await listed('')).data.map((record) => record.id), ids);
  });

  test('order=newest_first lists the last record first, page after page', async () => {
    const first = await listed('?order=newest_first&limit=3');
    const second = await listed(`?order=newest_first&limit=3&cursor=${first.next_cursor}`);

    assert.deepEqual([...first.data, ...second.data].map((record) => record.id), [...ids].reverse());
    assert.equal(second.next_cursor, null);
  });

  test('since and until keep the records received in the window, in either order', async () => {
    const window = `since=${new Date(T0 + DAY).toISOString()}&until=${new Date(T0 + 3 * DAY).toISOString()}`;
    assert.deepEqual((await listed(`?${window}`)).data.map((record) => record.id), [ids[1], ids[2]]);
    assert.deepEqual((await listed(`?${window}&order=newest_first`)).data.map((record) => record.id), [ids[2], ids[1]]);
    assert.deepEqual((await listed(`?since=${new Date(T0 + 3 * DAY).toISOString()}`)).data.map((record) => record.id), [ids[3]]);
  });

  test('until before since, a bad time or order, or a cursor of the other order is a 400', async () => {
    const ask = (query: string) => call(t, 'GET', `${OKMS}/${serial}/audit${query}`, { token: tokens.acmeRead });
    const oldestFirst = await listed('?limit=1');

    assert.equal((await ask(`?since=${new Date(T0 + DAY).toISOString()}&until=${new Date(T0).toISOString()}`)).statusCode, 400);
    assert.equal((await ask('?since=yesterday')).statusCode, 400);
    assert.equal((await ask('?order=random')).statusCode, 400);
    assert.equal((await ask(`?order=newest_first&cursor=${oldestFirst.next_cursor}`)).statusCode, 400);
  });

  test('the CSV export has a header and one record a row, as sent, in the order and window asked, formula cells escaped', async () => {
    const response = await call(t, 'GET', `${OKMS}/${serial}/audit/export?order=newest_first&since=${new Date(T0 + 2 * DAY).toISOString()}`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^text\/csv/);
    assert.match(String(response.headers['content-disposition']), new RegExp(`attachment; filename="keyfleet-${serial}-audit-\\d{4}-\\d{2}-\\d{2}\\.csv"`));
    const rows = parseCsv(response.body);
    assert.deepEqual(rows[0], ['id', 'received_at', 'record']);
    assert.deepEqual(
      rows.slice(1).map((row) => row[0]),
      [String(ids[3]), String(ids[2])],
    );
    assert.equal(rows[1]![1], new Date(T0 + 3 * DAY).toISOString());
    assert.equal(rows[2]![2], '"plain"');
    const whole = parseCsv((await call(t, 'GET', `${OKMS}/${serial}/audit/export`, { token: tokens.acmeRead })).body);
    assert.equal(whole[1]![2], '{"event":"open","door":1}');
    assert.equal(whole.length, 5);
  });

  test("another customer's token gets the 404 of an OKM it cannot see, for the list and the export; no credential: 401", async () => {
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit/export`, { token: tokens.betaWrite })).statusCode, 404);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit?order=newest_first`, { token: tokens.betaWrite })).statusCode, 404);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit/export`)).statusCode, 401);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit/export`, { token: tokens.admin })).statusCode, 200);
  });

  test('a record that starts like a formula is written as text', async () => {
    await t.db.insertInto('okm_audit_records').values({ okm_serial: serial, received_at: T0 + 10 * DAY, record: '-1' }).execute();
    const rows = parseCsv((await call(t, 'GET', `${OKMS}/${serial}/audit/export?since=${new Date(T0 + 10 * DAY).toISOString()}`, { token: tokens.acmeRead })).body);
    assert.equal(rows[1]![2], "'-1");
  });
});

forEachDatabase('the OKM list as CSV (GET /api/v1/okm-export)', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  const prefix = `EXP${process.pid}`;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
    const acme = (await findCustomerByName(t.db, 'acme'))!.id;
    const beta = (await findCustomerByName(t.db, 'beta'))!.id;
    for (const [suffix, customer] of [['-A1', acme], ['-A2', acme], ['-B1', beta]] as const) {
      await insertOkm(t.db, `${prefix}${suffix}`, customer, { ...UNCONFIGURED_OKM, pollingInterval: 60 }, Date.now());
    }
    await setLastPoll(t, `${prefix}-A1`, 1000);
    // Enough OKMs for more than one page of the walk the export makes (500 a page).
    const many = Array.from({ length: 620 }, (_, index) => ({ serial_number: `${prefix}M-${String(index).padStart(4, '0')}`, customer_id: acme, auditing_enabled: 0, status_urls: '[]', created_at: 1, updated_at: 1 }));
    await t.db.insertInto('okms').values(many).execute();
  });
  after(() => t.close());

  const exported = async (query: string, token = tokens.acmeRead) => {
    const response = await call(t, 'GET', `/api/v1/okm-export${query}`, { token });
    assert.equal(response.statusCode, 200, response.body);
    return parseCsv(response.body);
  };

  test("a customer's token exports its own OKMs with the list's filters, by serial number, with a header row", async () => {
    const rows = await exported(`?serial_prefix=${prefix}-`);

    assert.deepEqual(rows[0]!.slice(0, 4), ['serial_number', 'customer', 'summary_state', 'state']);
    assert.ok(!rows[0]!.includes('install_code'));
    assert.deepEqual(rows.slice(1).map((row) => row[0]), [`${prefix}-A1`, `${prefix}-A2`]);
    const header = rows[0]!;
    const first = Object.fromEntries(header.map((column, index) => [column, rows[1]![index]]));
    assert.equal(first.customer, 'acme');
    assert.equal(first.effective_polling_interval, '60');
    assert.notEqual(first.last_sync_time, '');
  });

  test('filters narrow the export as they narrow the list; every OKM of a long list is there once', async () => {
    assert.deepEqual((await exported(`?serial_prefix=${prefix}-&state=never_polled`)).slice(1).map((row) => row[0]), [`${prefix}-A2`]);
    const all = (await exported(`?serial_prefix=${prefix}M-`)).slice(1).map((row) => row[0]);
    assert.equal(all.length, 620);
    assert.equal(new Set(all).size, 620);
    assert.deepEqual(all, [...all].sort());
  });

  test("an admin exports every customer's OKMs or one customer's; beta never sees acme's; naming another customer is a 403", async () => {
    assert.deepEqual((await exported(`?serial_prefix=${prefix}-`, tokens.admin)).slice(1).map((row) => row[0]).sort(), [`${prefix}-A1`, `${prefix}-A2`, `${prefix}-B1`]);
    assert.deepEqual((await exported(`?serial_prefix=${prefix}-&customer=beta`, tokens.admin)).slice(1).map((row) => row[0]), [`${prefix}-B1`]);
    assert.deepEqual((await exported(`?serial_prefix=${prefix}`, tokens.betaWrite)).slice(1).map((row) => row[0]), [`${prefix}-B1`]);
    assert.equal((await call(t, 'GET', '/api/v1/okm-export?customer=acme', { token: tokens.betaWrite })).statusCode, 403);
    assert.equal((await call(t, 'GET', '/api/v1/okm-export?unassigned=true', { token: tokens.acmeRead })).statusCode, 403);
  });

  test('a page parameter or an unknown filter is a 400; no credential is a 401', async () => {
    assert.equal((await call(t, 'GET', '/api/v1/okm-export?limit=5', { token: tokens.acmeRead })).statusCode, 400);
    assert.equal((await call(t, 'GET', '/api/v1/okm-export?colour=red', { token: tokens.acmeRead })).statusCode, 400);
    assert.equal((await call(t, 'GET', '/api/v1/okm-export')).statusCode, 401);
  });
});
