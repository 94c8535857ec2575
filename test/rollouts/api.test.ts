import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertOkm } from '../../src/okm/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, customerWriter } from './fleet-helpers.ts';

const GROUPS = [{ percent: 10 }, { percent: 100 }];

forEachDatabase('rollouts API', (kind) => {
  let t: TestApp;
  let acme: ReturnType<typeof api>;
  let globex: ReturnType<typeof api>;
  let admin: ReturnType<typeof api>;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    for (const name of ['acme', 'globex']) {
      const customer = await createTestCustomer(t, name);
      for (let index = 0; index < 20; index++) await insertOkm(t.db, `${name.toUpperCase()}-${index}`, customer.id, UNCONFIGURED_OKM, Date.now());
    }
    acme = api(t, await customerWriter(t, 'acme'));
    globex = api(t, await customerWriter(t, 'globex'));
    admin = api(t, await issueTestToken(t, { scopes: ['admin'] }));
  });
  after(() => t.close());

  test('create answers 201 with the rollout in state ready, its groups chosen and counted, and the defaults filled in', async () => {
    const response = await acme.create({ kind: 'kas', version: '2.0', groups: GROUPS });

    assert.equal(response.statusCode, 201, response.body);
    const rollout = response.json().data;
    assert.equal(rollout.state, 'ready');
    assert.equal(rollout.customer, 'acme');
    assert.deepEqual(
      rollout.groups.map((group: { okms: number; state: string; counts: unknown }) => [group.okms, group.state, group.counts]),
      [
        [2, 'waiting', { scheduled: 2, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 0 }],
        [18, 'waiting', { scheduled: 18, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 0 }],
      ],
    );
    assert.deepEqual([rollout.success_threshold, rollout.error_threshold, rollout.update_timeout, rollout.auto_advance, rollout.current_group], [95, 5, '1h', true, null]);
    await acme.act(rollout.id, 'abort');
  });

  test('validation messages name the field', async () => {
    const cases: [unknown, number, string][] = [
      [{ version: '2.0', groups: GROUPS }, 400, 'kind: required'],
      [{ kind: 'kas', version: '2.0', groups: [{ percent: 10 }, { percent: 10 }] }, 400, "groups[1].percent: must be greater than the previous group's (10): percents are cumulative"],
      [{ kind: 'kas', version: '2.0', groups: [{ percent: 0 }] }, 400, 'groups[0].percent: must be >= 1'],
      [{ kind: 'kas', version: '2.0', groups: [] }, 400, 'groups: must NOT have fewer than 1 items'],
      [{ kind: 'kas', version: '9.9', groups: GROUPS }, 400, 'version: no kas release 9.9 in the firmware catalog'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, success_threshold: 101 }, 400, 'success_threshold: must be <= 100'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, update_timeout: 'soon' }, 400, 'update_timeout: must match pattern "^[0-9]{1,9}(ms|s|m|h|d)$"'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, maintenance_window: { from: '25:00', to: '06:00' } }, 400, 'maintenance_window.from: must match pattern "^([01][0-9]|2[0-3]):[0-5][0-9]$"'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, start_at: 'tomorrow' }, 400, 'start_at: must match format "date-time"'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, colour: 'red' }, 400, 'colour: unknown field'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, customer: 'globex' }, 403, 'Token may not act for customer globex'],
      [{ kind: 'kas', version: '2.0', groups: GROUPS, filter: { serial_numbers: ['GLOBEX-1'] } }, 409, 'the rollout would reach no OKM: none of acme matches that is below 2.0, has no kas pin of its own and is in no other unfinished rollout'],
    ];
    for (const [body, status, message] of cases) {
      const response = await acme.create(body);
      assert.deepEqual([response.statusCode, response.json().error_msg], [status, message], JSON.stringify(body));
    }
  });

  test("a customer sees and acts on its own rollouts only: another customer's is not found", async () => {
    const rollout = (await acme.create({ kind: 'kas', version: '2.0', groups: GROUPS })).json().data;

    const seen = await globex.get(rollout.id);
    const started = await globex.act(rollout.id, 'start');
    const listed = (await globex.list()).json().data.map((item: { id: number }) => item.id);
    const byAdmin = await admin.get(rollout.id);

    assert.deepEqual([seen.statusCode, seen.json().error_msg], [404, `rollout ${rollout.id} not found`]);
    assert.equal(started.statusCode, 404);
    assert.ok(!listed.includes(rollout.id));
    assert.equal(byAdmin.statusCode, 200);
    assert.equal((await acme.get(rollout.id)).json().data.state, 'ready');
    await acme.act(rollout.id, 'abort');
  });

  test('states: ready → running ⇄ paused → aborted; pause and abort are idempotent; a step the state does not allow is 409', async () => {
    const rollout = (await acme.create({ kind: 'kas', version: '2.0', groups: GROUPS })).json().data;
    const steps: [string, number, string][] = [
      ['pause', 409, 'ready'],
      ['resume', 409, 'ready'],
      ['advance', 409, 'ready'],
      ['start', 200, 'running'],
      ['start', 409, 'running'],
      ['pause', 200, 'paused'],
      ['pause', 200, 'paused'],
      ['advance', 409, 'paused'],
      ['resume', 200, 'running'],
      ['advance', 200, 'running'],
      ['abort', 200, 'aborted'],
      ['abort', 200, 'aborted'],
      ['resume', 409, 'aborted'],
    ];
    for (const [action, status, state] of steps) {
      const response = await acme.act(rollout.id, action);
      assert.equal(response.statusCode, status, `${action}: ${response.body}`);
      assert.equal((await acme.get(rollout.id)).json().data.state, state, action);
    }
    assert.equal((await acme.act(rollout.id, 'pause')).json().error_msg, `rollout ${rollout.id} is aborted: it cannot be paused`);
  });

  test('advancing past the last group finishes the rollout; a finished rollout cannot be aborted', async () => {
    const rollout = (await acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }] })).json().data;
    await acme.act(rollout.id, 'start');

    const finished = (await acme.act(rollout.id, 'advance')).json().data;
    const abort = await acme.act(rollout.id, 'abort');

    assert.deepEqual([finished.state, finished.state_reason, finished.groups[0].state], ['finished', 'operator', 'completed']);
    assert.equal(abort.statusCode, 409);
  });

  test('an OKM in an unfinished rollout is not taken by another one', async () => {
    const first = (await acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: ['ACME-1', 'ACME-2'] } })).json().data;

    const second = (await acme.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: ['ACME-2', 'ACME-3'] } })).json().data;

    assert.equal(second.groups[0].okms, 1);
    await acme.act(first.id, 'abort');
    await acme.act(second.id, 'abort');
  });

  test('a deployment-wide rollout (admin, no customer) reaches every customer’s OKMs and no customer token sees it', async () => {
    const rollout = (await admin.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }] })).json().data;

    assert.equal(rollout.customer, null);
    assert.equal(rollout.groups[0].okms, 40);
    assert.equal((await acme.get(rollout.id)).statusCode, 404);
    assert.equal((await admin.act(rollout.id, 'abort')).statusCode, 200);
  });
});
