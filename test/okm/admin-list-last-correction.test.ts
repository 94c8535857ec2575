import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { walkKeys } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call } from './admin-helpers.ts';

/**
 * GET /api/v1/okms?last_correction=<reply key>: the OKMs the fleet summary counts under that
 * resolver in `corrections` (the console's "corrections by resolver" links here).
 */
forEachDatabase('OKM list by last correction', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  async function okmsOf(customer: string, okms: [serial: string, lastCorrection: string | null][]) {
    const token = await issueTestToken(t, { customer, scopes: ['okm:read'] });
    const { id } = (await findCustomerByName(t.db, customer))!;
    await t.db
      .insertInto('okms')
      .values(okms.map(([serial, lastCorrection]) => ({ serial_number: serial, customer_id: id, last_correction: lastCorrection, overdue_at: null, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 })))
      .execute();
    await t.db.insertInto('okm_polls').values(okms.map(([serial]) => ({ serial_number: serial, last_sync_time: Date.now(), last_ip: '203.0.113.5', reported: '{}' }))).execute();
    return token;
  }
  const serialsOf = (response: { json(): { data: { serial_number: string }[] } }) => response.json().data.map((okm) => okm.serial_number);

  test('lists the OKMs whose last poll that resolver answered, as many as the fleet summary counts, of the token\'s customer only', async () => {
    const acme = await okmsOf(`lc-acme-${kind}`, [
      ['LC-A1', 'kasDateTime'],
      ['LC-A2', 'cacheMode'],
      ['LC-A3', null],
      ['LC-A4', 'kasDateTime'],
    ]);
    await okmsOf(`lc-beta-${kind}`, [['LC-B1', 'kasDateTime']]);
    assert.ok(await t.app.fleetPass.runPass());

    const summary = (await call(t, 'GET', `/api/v1/fleet/summary?customer=lc-acme-${kind}`, { token: admin })).json().data;
    const listed = await walkKeys({ t, token: acme, url: `${OKMS}?last_correction=kasDateTime`, keyOf: (okm) => okm.serial_number as string }, 1);

    assert.deepEqual(listed, ['LC-A1', 'LC-A4']);
    assert.equal(summary.corrections.kasDateTime, listed.length);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?last_correction=cacheMode`, { token: acme })), ['LC-A2']);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?last_correction=kasDateTime`, { token: admin })), ['LC-A1', 'LC-A4', 'LC-B1']);
    assert.deepEqual(serialsOf(await call(t, 'GET', `${OKMS}?last_correction=kasDateTime&serial_prefix=LC-A4`, { token: acme })), ['LC-A4']);
  });

  test('a value that names no resolver is a 400 naming last_correction; without a token a 401 first', async () => {
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });
    for (const value of ['', 'kasdatetime', 'firmware']) {
      const response = await call(t, 'GET', `${OKMS}?last_correction=${value}`, { token });
      assert.equal(response.statusCode, 400, value);
      assert.match(response.json().error_msg, /(^|\.)last_correction: /, value);
    }
    assert.equal((await call(t, 'GET', `${OKMS}?last_correction=nonsense`)).statusCode, 401);
  });
});
