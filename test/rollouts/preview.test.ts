import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertOkm } from '../../src/okm/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, customerWriter } from './fleet-helpers.ts';

const GROUPS = [{ percent: 1 }, { percent: 10 }, { percent: 100 }];

forEachDatabase('rollout preview', (kind) => {
  let t: TestApp;
  let acmeToken: string;
  let adminToken: string;
  const preview = (token: string | undefined, body: unknown) =>
    t.app.inject({ method: 'POST', url: '/api/v1/rollouts/preview', headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, payload: body as object });

  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    const acme = await createTestCustomer(t, 'acme');
    const globex = await createTestCustomer(t, 'globex');
    for (let index = 0; index < 150; index++) await insertOkm(t.db, `ACME-${index}`, acme.id, UNCONFIGURED_OKM, Date.now());
    for (let index = 0; index < 30; index++) await insertOkm(t.db, `GLOBEX-${index}`, globex.id, UNCONFIGURED_OKM, Date.now());
    // Five acme OKMs already run 2.0: they are in no group.
    await t.db.updateTable('okms').set({ firmware_version: '2.0' }).where('serial_number', 'in', ['ACME-0', 'ACME-1', 'ACME-2', 'ACME-3', 'ACME-4']).execute();
    acmeToken = await customerWriter(t, 'acme');
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  test('when a customer previews a rollout, the group sizes are those the create then chooses, and nothing is stored', async () => {
    const response = await preview(acmeToken, { kind: 'kas', version: '2.0', groups: GROUPS });

    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json().data, {
      eligible: 145,
      up_to_date: 5,
      groups: [
        { percent: 1, okms: 2 },
        { percent: 10, okms: 13 },
        { percent: 100, okms: 130 },
      ],
    });
    assert.equal((await api(t, acmeToken).list()).json().data.length, 0);
    const created = (await api(t, acmeToken).create({ kind: 'kas', version: '2.0', groups: GROUPS })).json().data;
    assert.deepEqual(
      created.groups.map((group: { okms: number }) => group.okms),
      [2, 13, 130],
    );
    await api(t, acmeToken).act(created.id, 'abort');
  });

  test('when the filter narrows the fleet, the preview counts only the OKMs it names', async () => {
    const response = await preview(acmeToken, { kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], filter: { serial_numbers: ['ACME-4', 'ACME-10', 'ACME-11', 'ACME-12'] } });

    assert.deepEqual(response.json().data, { eligible: 3, up_to_date: 1, groups: [{ percent: 50, okms: 2 }, { percent: 100, okms: 1 }] });
  });

  test("when a customer previews, another customer's OKMs are never counted and naming another customer is refused", async () => {
    const own = await preview(acmeToken, { kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: ['GLOBEX-1', 'GLOBEX-2'] } });
    const other = await preview(acmeToken, { kind: 'kas', version: '2.0', groups: [{ percent: 100 }], customer: 'globex' });
    const byAdmin = await preview(adminToken, { kind: 'kas', version: '2.0', groups: [{ percent: 100 }], customer: 'globex' });
    const everyCustomer = await preview(adminToken, { kind: 'kas', version: '2.0', groups: [{ percent: 100 }] });

    assert.deepEqual(own.json().data, { eligible: 0, up_to_date: 0, groups: [{ percent: 100, okms: 0 }] });
    assert.deepEqual([other.statusCode, other.json().error_msg], [403, 'Token may not act for customer globex']);
    assert.equal(byAdmin.json().data.eligible, 30);
    assert.equal(everyCustomer.json().data.eligible, 175);
  });

  test('when the body is wrong, the preview answers 400 naming the field, as the create does', async () => {
    const cases: [unknown, number, string][] = [
      [{ kind: 'kas', version: '9.9', groups: GROUPS }, 400, 'version: no kas release 9.9 in the firmware catalog'],
      [{ kind: 'kas', version: '2.0', groups: [{ percent: 10 }, { percent: 10 }] }, 400, "groups[1].percent: must be greater than the previous group's (10): percents are cumulative"],
      [{ kind: 'kas', version: '2.0', groups: [{ percent: 101 }] }, 400, 'groups[0].percent: must be <= 100'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, customer: 'nobody\u0000' }, 400, 'customer: must match pattern "^[A-Za-z0-9._-]{1,64}$"'],
    ];
    for (const [body, status, message] of cases) {
      const response = await preview(acmeToken, body);
      assert.deepEqual([response.statusCode, response.json().error_msg], [status, message], JSON.stringify(body));
    }
  });

  test('without a token the preview is 401, before the body is looked at', async () => {
    const response = await preview(undefined, { nonsense: true });

    assert.equal(response.statusCode, 401);
  });
});
