import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { parseCsv } from '../helpers/csv.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, createFleet, customerWriter, type SimulatedOkm } from './fleet-helpers.ts';

/** GET /api/v1/rollouts/{id}/okms/export: the rollout's OKM list, with its filters, as CSV. */
forEachDatabase("a rollout's OKMs as CSV", (kind) => {
  let t: TestApp;
  let acmeToken: string;
  let globexToken: string;
  let adminToken: string;
  let fleet: SimulatedOkm[];
  let rollout: RolloutView;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    const customer = await createTestCustomer(t, 'acme');
    await createTestCustomer(t, 'globex');
    fleet = await createFleet(t, customer.id, 6, '1.0', 'RX');
    acmeToken = await customerWriter(t, 'acme');
    globexToken = await customerWriter(t, 'globex');
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
    const acme = api(t, acmeToken);
    const created = await acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], update_timeout: '1h', error_threshold: 100 });
    assert.equal(created.statusCode, 201, created.body);
    rollout = created.json().data;
    assert.equal((await acme.act(rollout.id, 'start')).statusCode, 200);
    for (const okm of fleet) await okm.poll(t);
  });
  after(() => t.close());

  const exportOf = (token: string | undefined, query = '') =>
    t.app.inject({ method: 'GET', url: `/api/v1/rollouts/${rollout.id}/okms/export${query}`, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const listOf = async (query = '') => (await t.app.inject({ method: 'GET', url: `/api/v1/rollouts/${rollout.id}/okms${query}`, headers: { authorization: `Bearer ${acmeToken}` } })).json().data as Record<string, unknown>[];

  test('the export holds the rows the list shows, by serial number, every column of the list', async () => {
    const response = await exportOf(acmeToken);

    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^text\/csv/);
    assert.match(String(response.headers['content-disposition']), new RegExp(`filename="keyfleet-rollout-${rollout.id}-okms-`));
    const [header, ...rows] = parseCsv(response.body);
    assert.deepEqual(header, ['serial_number', 'group', 'state', 'offered_at', 'last_sync_time', 'reported_version', 'blocked_by', 'first_poll_due_at']);
    const listed = await listOf();
    assert.equal(rows.length, 6);
    assert.deepEqual(
      rows,
      listed.map((okm) => header!.map((column) => (okm[column] === null ? '' : String(okm[column])))),
    );
  });

  test("the list's filters narrow the export alike", async () => {
    for (const query of ['?group=1', '?state=offered', '?state=scheduled&group=1']) {
      const rows = parseCsv((await exportOf(acmeToken, query)).body).slice(1);
      assert.deepEqual(rows.map((row) => row[0]), (await listOf(query)).map((okm) => okm.serial_number), query);
    }
  });

  test("another customer's token gets the rollout's 404; an admin exports it; bad filters are a 400; no credential a 401", async () => {
    assert.equal((await exportOf(globexToken)).statusCode, 404);
    assert.equal((await exportOf(adminToken)).statusCode, 200);
    assert.equal((await exportOf(acmeToken, '?group=7')).statusCode, 400);
    assert.equal((await exportOf(acmeToken, '?limit=5')).statusCode, 400);
    assert.equal((await exportOf(undefined)).statusCode, 401);
  });
});
