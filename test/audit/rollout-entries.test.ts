import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { createRollout } from '../../src/rollouts/service.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { Db } from '../../src/db/database.ts';
import { buildTestApp, forEachDatabase, openTestStore, type TestApp, type TestStore } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { api, recordingEmitter } from '../rollouts/fleet-helpers.ts';

/** What the tests compare of an entry: who, what, of whom, and the change. */
const summary = (entry: AuditEntry) => ({
  action: entry.action,
  entity: entry.entity,
  customer: entry.customer,
  actor: entry.actor.kind,
  before: entry.before,
  after: entry.after,
});

/** Inserts `count` OKMs of the customer, named PREFIX-0 …, that no rollout has taken yet. */
async function insertOkms(db: Db, customerId: number, prefix: string, count: number): Promise<string[]> {
  const serials = Array.from({ length: count }, (_, index) => `${prefix}-${String(index).padStart(3, '0')}`);
  for (const serial of serials) await insertOkm(db, serial, customerId, UNCONFIGURED_OKM, Date.now());
  return serials;
}

/** Sets the status of every member of one group of the rollout, as polls and the sweep leave them. */
async function setGroupStatus(db: Db, rolloutId: number, group: number, status: string): Promise<void> {
  await db.updateTable('rollout_members').set({ status }).where('rollout_id', '=', rolloutId).where('group_index', '=', group).execute();
}

forEachDatabase('audit entries of rollout changes', (kind) => {
  let t: TestApp;
  let acmeId: number;
  let writer: ReturnType<typeof api>;
  let approver: ReturnType<typeof api>;
  let admin: ReturnType<typeof api>;
  let globex: ReturnType<typeof api>;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    acmeId = (await createTestCustomer(t, 'acme')).id;
    await createTestCustomer(t, 'globex');
    writer = api(t, await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'rollout:write'], subject: 'writer' }));
    approver = api(t, await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'rollout:approve'], subject: 'approver' }));
    admin = api(t, await issueTestToken(t, { scopes: ['admin'], subject: 'admin' }));
    globex = api(t, await issueTestToken(t, { customer: 'globex', scopes: ['okm:read', 'rollout:write'], subject: 'globex' }));
  });
  after(() => t.close());

  test('create, start, pause, resume, advance and abort through the API each append one entry, by the token, of the customer; a preview and a second pause append none', async () => {
    const serials = await insertOkms(t.db, acmeId, 'API', 10);
    const body = { kind: 'kas', version: '2.0', groups: [{ percent: 30 }, { percent: 100 }], filter: { serial_numbers: serials } };
    const start = await lastAuditId(t.db);

    const preview = await t.app.inject({ method: 'POST', url: '/api/v1/rollouts/preview', headers: { authorization: `Bearer ${await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] })}` }, payload: body });
    assert.equal(preview.statusCode, 200, preview.body);
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);

    const created = await writer.create(body);
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.id as number;
    const states: string[] = [];
    for (const action of ['start', 'pause', 'pause', 'resume', 'advance', 'abort']) {
      const response = await writer.act(id, action);
      assert.equal(response.statusCode, 200, `${action}: ${response.body}`);
      states.push(response.json().data.state);
    }
    assert.deepEqual(states, ['running', 'paused', 'paused', 'running', 'running', 'aborted']);

    const entries = await auditEntriesAfter(t.db, start);
    const entity = { type: 'rollout', id: String(id) };
    assert.deepEqual(entries.map(summary), [
      {
        action: 'rollout.created',
        entity,
        customer: 'acme',
        actor: 'token',
        before: null,
        after: {
          state: 'ready',
          kind: 'kas',
          version: '2.0',
          filter: { serial_number_count: 10 },
          groups: [
            { percent: 30, okms: 3 },
            { percent: 100, okms: 7 },
          ],
          members: 10,
          success_threshold: 95,
          error_threshold: 5,
          update_timeout: '1h',
          auto_advance: true,
          start_at: null,
          maintenance_window: null,
          approval_required: false,
          retry_policy: null,
        },
      },
      { action: 'rollout.started', entity, customer: 'acme', actor: 'token', before: { state: 'ready', current_group: null }, after: { state: 'running', current_group: 0, state_reason: 'operator' } },
      { action: 'rollout.paused', entity, customer: 'acme', actor: 'token', before: { state: 'running' }, after: { state: 'paused', state_reason: 'operator' } },
      { action: 'rollout.resumed', entity, customer: 'acme', actor: 'token', before: { state: 'paused' }, after: { state: 'running', state_reason: 'resumed' } },
      { action: 'rollout.advanced', entity, customer: 'acme', actor: 'token', before: { state: 'running', current_group: 0 }, after: { state: 'running', current_group: 1 } },
      { action: 'rollout.aborted', entity, customer: 'acme', actor: 'token', before: { state: 'running' }, after: { state: 'aborted', state_reason: 'operator' } },
    ]);
    for (const entry of entries) {
      assert.equal(entry.actor.id.length > 0, true);
      assert.equal(entry.ip, '127.0.0.1');
      assert.match(entry.request_id!, /.+/);
    }
    // Aborting an aborted rollout changes nothing.
    const again = await writer.act(id, 'abort');
    assert.equal(again.statusCode, 200);
    assert.equal((await auditEntriesAfter(t.db, start)).length, entries.length);
    await assertAuditChainIntact(t.db);
  });

  test('an approval by another operator is recorded once; an advance past the last group of a deployment-wide rollout is recorded as the advance that finishes it, customer null', async () => {
    const serials = await insertOkms(t.db, acmeId, 'APPROVE', 4);
    const start = await lastAuditId(t.db);
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: serials } });
    const id = created.json().data.id as number;
    const approved = await approver.act(id, 'approve');
    const approvedAgain = await approver.act(id, 'approve');
    assert.deepEqual([approved.statusCode, approvedAgain.statusCode], [200, 200]);
    await writer.act(id, 'abort');

    const [creation, approval, abort, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assert.equal(creation!.action, 'rollout.created');
    assert.equal((creation!.after as { approval_required: boolean }).approval_required, true);
    assert.deepEqual(summary(approval!), {
      action: 'rollout.approved',
      entity: { type: 'rollout', id: String(id) },
      customer: 'acme',
      actor: 'token',
      before: { state: 'ready', approved_by: null },
      after: { state: 'ready', approved_by: 'approver' },
    });
    assert.deepEqual([abort!.action, abort!.before, abort!.after], ['rollout.aborted', { state: 'ready' }, { state: 'aborted', state_reason: 'operator' }]);

    const fleetSerials = await insertOkms(t.db, acmeId, 'FLEET', 2);
    const fleetStart = await lastAuditId(t.db);
    const fleet = await admin.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: fleetSerials } });
    const fleetId = fleet.json().data.id as number;
    assert.equal((await admin.act(fleetId, 'start')).statusCode, 200);
    const finished = await admin.act(fleetId, 'advance');
    assert.equal(finished.json().data.state, 'finished');

    const fleetEntries = await auditEntriesAfter(t.db, fleetStart);
    assert.deepEqual(
      fleetEntries.map((entry) => [entry.action, entry.customer]),
      [
        ['rollout.created', null],
        ['rollout.started', null],
        ['rollout.advanced', null],
      ],
    );
    assert.deepEqual([fleetEntries[2]!.before, fleetEntries[2]!.after], [{ state: 'running' }, { state: 'finished', state_reason: 'operator' }]);
    await assertAuditChainIntact(t.db);
  });

  test('refused calls append nothing: a create the schema, the catalog or the fleet refuses, an action the state refuses, another customer’s rollout, one’s own approval', async () => {
    const serials = await insertOkms(t.db, acmeId, 'REFUSED', 3);
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: serials } });
    const id = created.json().data.id as number;
    const ownApprover = api(t, await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'rollout:approve'], subject: 'writer' }));
    const start = await lastAuditId(t.db);

    const refused = [
      await writer.create({ kind: 'kas', version: '2.0', groups: [] }),
      await writer.create({ kind: 'kas', version: '9.9', groups: [{ percent: 100 }] }),
      await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: ['NOBODY-1'] } }),
      await writer.act(id, 'resume'),
      await writer.act(id, 'advance'),
      await writer.act(id, 'start'),
      await globex.act(id, 'abort'),
      await ownApprover.act(id, 'approve'),
      await writer.act(999_999, 'pause'),
    ];

    assert.deepEqual(
      refused.map((response) => response.statusCode),
      [400, 400, 409, 409, 409, 409, 404, 409, 404],
    );
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    await writer.act(id, 'abort');
  });

  test('the sweep records its own changes as keyfleet’s, one entry per change of state: a scheduled start, an advance, the finish, a pause on failures; a sweep with nothing to change records nothing', async () => {
    const serials = await insertOkms(t.db, acmeId, 'SWEEP', 10);
    const { emit } = recordingEmitter();
    const sweep = () => sweepRollouts(t.db, t.dialect, emit, Date.now());
    const startAt = new Date(Date.now() - 1000).toISOString();
    const created = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 50 }, { percent: 100 }], start_at: startAt, filter: { serial_numbers: serials.slice(0, 6) } });
    const id = created.json().data.id as number;
    const entity = { type: 'rollout', id: String(id) };
    const start = await lastAuditId(t.db);

    await sweep();
    await sweep();
    await setGroupStatus(t.db, id, 0, 'updated');
    await sweep();
    await setGroupStatus(t.db, id, 1, 'updated');
    await sweep();
    await sweep();

    assert.deepEqual((await auditEntriesAfter(t.db, start)).map(summary), [
      { action: 'rollout.started', entity, customer: 'acme', actor: 'system', before: { state: 'ready', current_group: null }, after: { state: 'running', current_group: 0, state_reason: 'start_at' } },
      { action: 'rollout.advanced', entity, customer: 'acme', actor: 'system', before: { state: 'running', current_group: 0 }, after: { state: 'running', current_group: 1 } },
      { action: 'rollout.advanced', entity, customer: 'acme', actor: 'system', before: { state: 'running' }, after: { state: 'finished', state_reason: 'success_threshold' } },
    ]);
    for (const entry of await auditEntriesAfter(t.db, start)) {
      assert.deepEqual([entry.actor, entry.request_id, entry.ip, entry.user_agent], [{ kind: 'system', id: 'keyfleet', name: 'keyfleet' }, null, null, null]);
    }

    const failing = await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: serials.slice(6) } });
    const failingId = failing.json().data.id as number;
    await writer.act(failingId, 'start');
    await setGroupStatus(t.db, failingId, 0, 'failed');
    const pauseStart = await lastAuditId(t.db);
    await sweep();
    await sweep();

    assert.deepEqual((await auditEntriesAfter(t.db, pauseStart)).map(summary), [
      { action: 'rollout.paused', entity: { type: 'rollout', id: String(failingId) }, customer: 'acme', actor: 'system', before: { state: 'running' }, after: { state: 'paused', state_reason: 'error_threshold' } },
    ]);
    await writer.act(failingId, 'abort');
    await assertAuditChainIntact(t.db);
  });

  test('a change that fails after its entry is written leaves neither the change nor the entry: an operator’s pause, the sweep’s', async () => {
    const serials = await insertOkms(t.db, acmeId, 'ROLLBACK', 4);
    const first = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: serials.slice(0, 2) } })).json().data.id as number;
    const second = (await writer.create({ kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: serials.slice(2) } })).json().data.id as number;
    for (const id of [first, second]) assert.equal((await writer.act(id, 'start')).statusCode, 200);
    await setGroupStatus(t.db, second, 0, 'failed');
    const start = await lastAuditId(t.db);

    await withFailureAfterEachAuditEntry(t.db, kind, async () => {
      assert.equal((await writer.act(first, 'pause')).statusCode, 500);
      await assert.rejects(sweepRollouts(t.db, t.dialect, recordingEmitter().emit, Date.now()), /injected failure/);
    });

    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    assert.deepEqual([(await writer.get(first)).json().data.state, (await writer.get(second)).json().data.state], ['running', 'running']);
    for (const id of [first, second]) await writer.act(id, 'abort');
    await assertAuditChainIntact(t.db);
  });
});

forEachDatabase('audit entries of rollout commands', (kind) => {
  let store: TestStore;
  let serials: string[];
  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);
  before(async () => {
    store = await openTestStore(kind);
    const created = await keyfleet('customer', 'create', 'acme');
    assert.equal(created.exitCode, 0, created.stderr);
    await addRelease(store.db, 'kas', '2.0');
    const customer = await store.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
    serials = await insertOkms(store.db, customer.id, 'CLI', 6);
  });
  after(() => store.close());

  test('create, start, pause, resume, advance, abort and approve each append one entry, by the account that runs the command (actor cli)', async () => {
    const start = await lastAuditId(store.db);
    const created = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '50,100', '--serials', serials.slice(0, 4).join(','), '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    const id = String(JSON.parse(created.stdout).rollout.id);
    for (const action of ['start', 'pause', 'resume', 'advance', 'abort']) {
      const run = await keyfleet('rollout', action, id);
      assert.equal(run.exitCode, 0, `${action}: ${run.stderr}`);
    }
    const refused = await keyfleet('rollout', 'resume', id);
    assert.equal(refused.exitCode, 4);

    const byAlice = await createRollout(
      { db: store.db, principal: { subject: 'alice', actor: { kind: 'token', id: 'alice', name: 'alice' }, customer: null, scopes: new Set(['admin']), isAdmin: true }, customerName: 'acme', now: Date.now(), emit: async () => {} },
      { kind: 'kas', version: '2.0', customer: 'acme', groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: serials.slice(4) } },
    );
    const approved = await keyfleet('rollout', 'approve', String(byAlice.id));
    assert.equal(approved.exitCode, 0, approved.stderr);

    const entries = await auditEntriesAfter(store.db, start);
    const account = os.userInfo().username;
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.entity.id, entry.customer, entry.actor.kind, entry.actor.id]),
      [
        ...['created', 'started', 'paused', 'resumed', 'advanced', 'aborted'].map((action) => [`rollout.${action}`, id, 'acme', 'cli', account]),
        ['rollout.created', String(byAlice.id), 'acme', 'token', 'alice'],
        ['rollout.approved', String(byAlice.id), 'acme', 'cli', account],
      ],
    );
    assert.deepEqual(entries.at(-1)!.after, { state: 'ready', approved_by: `cli:${account}` });
    for (const entry of entries) assert.deepEqual([entry.request_id, entry.ip, entry.user_agent], [null, null, null]);
    assert.equal((await keyfleet('rollout', 'abort', String(byAlice.id))).exitCode, 0);
    await assertAuditChainIntact(store.db);
  });
});
