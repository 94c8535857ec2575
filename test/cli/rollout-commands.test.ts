import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertOkm } from '../../src/okm/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { addRelease } from '../device/config-helpers.ts';
import { createRollout } from '../../src/rollouts/service.ts';

forEachDatabase('keyfleet rollout and customer time zones', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
    const created = await runKeyfleet(store.database.env, 'customer', 'create', 'acme', '--time-zone', 'Europe/Berlin', '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    await addRelease(store.db, 'kas', '2.0');
    const customer = await store.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
    for (let index = 0; index < 30; index++) await insertOkm(store.db, `CLI-ROLLOUT-${index}`, customer.id, UNCONFIGURED_OKM, Date.now());
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);

  test('customer create --time-zone and customer update take IANA names and refuse others, naming the field', async () => {
    const updated = await keyfleet('customer', 'update', 'acme', '--time-zone', 'America/New_York', '--json');
    const unknownZone = await keyfleet('customer', 'update', 'acme', '--time-zone', 'Mars/Olympus');
    const unknownCustomer = await keyfleet('customer', 'update', 'nobody', '--time-zone', 'UTC');
    await keyfleet('customer', 'update', 'acme', '--time-zone', 'Europe/Berlin');

    assert.deepEqual(JSON.parse(updated.stdout), { name: 'acme', time_zone: 'America/New_York' });
    assert.deepEqual([unknownZone.exitCode, unknownZone.stderr], [2, 'keyfleet: time_zone: expected an IANA time zone such as Europe/Berlin, got "Mars/Olympus"\n']);
    assert.equal(unknownCustomer.exitCode, 3);
  });

  test('rollout create, start, show, pause, resume, advance, list and abort, with --json and as a table', async () => {
    const created = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '10,100', '--window', '22:00-06:00', '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    const { rollout } = JSON.parse(created.stdout);
    const id = String(rollout.id);
    assert.deepEqual([rollout.state, rollout.groups.map((group: { okms: number }) => group.okms), rollout.created_by.startsWith('cli:')], ['ready', [3, 27], true]);
    assert.deepEqual(rollout.maintenance_window, { from: '22:00', to: '06:00', time_zone: 'Europe/Berlin' });

    const states = [];
    for (const action of ['start', 'pause', 'pause', 'resume', 'advance']) {
      const run = await keyfleet('rollout', action, id, '--json');
      assert.equal(run.exitCode, 0, `${action}: ${run.stderr}`);
      states.push([action, JSON.parse(run.stdout).rollout.state, JSON.parse(run.stdout).rollout.current_group]);
    }
    const shown = await keyfleet('rollout', 'show', id);
    const listed = await keyfleet('rollout', 'list', '--state', 'running', '--json');
    const aborted = await keyfleet('rollout', 'abort', id, '--json');
    const resumeAborted = await keyfleet('rollout', 'resume', id);
    const missing = await keyfleet('rollout', 'show', '999999');

    assert.deepEqual(states, [
      ['start', 'running', 0],
      ['pause', 'paused', 0],
      ['pause', 'paused', 0],
      ['resume', 'running', 0],
      ['advance', 'running', 1],
    ]);
    assert.equal(shown.exitCode, 0, shown.stderr);
    assert.match(shown.stdout, /^rollout \d+: kas 2\.0 for acme, running\n/);
    assert.match(shown.stdout, /^group +percent +state +okms +scheduled +blocked +silent +offered +updated +failed +progress$/m);
    // None of the OKMs has polled since its group started: all silent.
    assert.match(shown.stdout, /^1 +10% +completed +3 +0 +0 +3 +0 +0 +0 +\[\.{20}\] 0%$/m);
    assert.match(shown.stdout, /^2 +100% +running +27 +0 +0 +27 +0 +0 +0 +\[\.{20}\] 0%$/m);
    assert.match(shown.stdout, /^total +30 +0 +0 +30 +0 +0 +0 +\[\.{20}\] 0%$/m);
    assert.deepEqual(JSON.parse(listed.stdout).rollouts.map((item: { id: number }) => item.id), [rollout.id]);
    assert.equal(JSON.parse(aborted.stdout).rollout.state, 'aborted');
    assert.deepEqual([resumeAborted.exitCode, resumeAborted.stderr], [4, `keyfleet: rollout ${id} is aborted: it cannot be resumed\n`]);
    assert.deepEqual([missing.exitCode, missing.stderr], [3, 'keyfleet: rollout 999999 not found\n']);
  });

  test('rollout approve: approves a rollout another operator created, as cli:<account>, and again with the approval as it stands; its own rollout is refused (exit 4), an unknown one is exit 3, a malformed id exit 2', async () => {
    const okm = (await store.db.selectFrom('okms').select('serial_number').where('serial_number', 'like', 'CLI-ROLLOUT-%').orderBy('serial_number').limit(2).execute()).map((row) => row.serial_number);
    const byAlice = await createRollout(
      { db: store.db, principal: { subject: 'alice', actor: { kind: 'token', id: 'alice', name: 'alice' }, customer: null, scopes: new Set(['admin']), isAdmin: true }, customerName: 'acme', now: Date.now(), emit: async () => {} },
      { kind: 'kas', version: '2.0', customer: 'acme', groups: [{ percent: 100 }], approval_required: true, filter: { serial_numbers: [okm[0]!] } },
    );
    const ownCreated = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--serials', okm[1]!, '--approval-required', '--json');
    assert.equal(ownCreated.exitCode, 0, ownCreated.stderr);
    const own = String(JSON.parse(ownCreated.stdout).rollout.id);

    const approved = await keyfleet('rollout', 'approve', String(byAlice.id), '--json');
    const again = await keyfleet('rollout', 'approve', String(byAlice.id));
    const ownApproval = await keyfleet('rollout', 'approve', own, '--json');
    const missing = await keyfleet('rollout', 'approve', '999999');
    const malformed = await keyfleet('rollout', 'approve', 'seven');

    assert.equal(approved.exitCode, 0, approved.stderr);
    const { rollout } = JSON.parse(approved.stdout);
    assert.deepEqual([rollout.id, rollout.approval_required, rollout.approved_by.startsWith('cli:'), rollout.state], [byAlice.id, true, true, 'ready']);
    assert.equal(again.exitCode, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`approval by ${rollout.approved_by}`));
    assert.equal(ownApproval.exitCode, 4);
    assert.deepEqual(JSON.parse(ownApproval.stderr).error.message, `rollout ${own} was created by ${rollout.approved_by}: another operator (token subject) must approve it`);
    assert.deepEqual([missing.exitCode, missing.stderr], [3, 'keyfleet: rollout 999999 not found\n']);
    assert.equal(malformed.exitCode, 2);
    for (const id of [String(byAlice.id), own]) assert.equal((await keyfleet('rollout', 'abort', id)).exitCode, 0);
  });

  /** OKMs of acme no rollout has taken yet, under their own prefix. */
  async function freshOkms(prefix: string, count: number): Promise<string[]> {
    const customer = await store.db.selectFrom('customers').select('id').where('name', '=', 'acme').executeTakeFirstOrThrow();
    const serials = Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
    for (const serial of serials) await insertOkm(store.db, serial, customer.id, UNCONFIGURED_OKM, Date.now());
    return serials;
  }

  /** Creates a rollout of acme's `serials` through the CLI; returns its id. */
  async function createOf(version: string, groups: string, serials: string[]): Promise<string> {
    const created = await keyfleet('rollout', 'create', 'kas', version, '--customer', 'acme', '--groups', groups, '--serials', serials.join(','), '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    return String(JSON.parse(created.stdout).rollout.id);
  }

  /** Sets the status of the first members of a group, as polls and the sweep leave them. */
  async function setStatus(id: string, group: number, statuses: string[]): Promise<void> {
    const members = await store.db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', Number(id)).where('group_index', '=', group).orderBy('serial_number').execute();
    for (const [index, status] of statuses.entries()) {
      await store.db.updateTable('rollout_members').set({ status }).where('rollout_id', '=', Number(id)).where('serial_number', '=', members[index]!.serial_number).execute();
    }
  }

  test('rollout show of a rollout under way counts each group by status, with the percent updated and a bar filled in proportion', async () => {
    const id = await createOf('2.0', '20,100', await freshOkms('CLI-PROGRESS', 10));
    assert.equal((await keyfleet('rollout', 'start', id)).exitCode, 0);
    assert.equal((await keyfleet('rollout', 'advance', id)).exitCode, 0);
    await setStatus(id, 0, ['updated', 'failed']);
    await setStatus(id, 1, ['updated', 'updated', 'failed', 'offered', 'offered', 'offered']);

    const shown = await keyfleet('rollout', 'show', id);

    assert.equal(shown.exitCode, 0, shown.stderr);
    // The two members left scheduled have not polled since their group started: silent.
    assert.match(shown.stdout, /^1 +20% +completed +2 +0 +0 +0 +0 +1 +1 +\[#{10}\.{10}\] 50%$/m);
    assert.match(shown.stdout, /^2 +100% +running +8 +0 +0 +2 +3 +2 +1 +\[#{5}\.{15}\] 25%$/m);
    assert.match(shown.stdout, /^total +10 +0 +0 +2 +3 +3 +2 +\[#{6}\.{14}\] 30%$/m);
    assert.equal((await keyfleet('rollout', 'abort', id)).exitCode, 0);
  });

  test('rollout list without --json prints one line per rollout, newest first: id, kind and version, customer, state, group and progress', async () => {
    await addRelease(store.db, 'kas', '3.0');
    const running = await createOf('2.0', '50,100', await freshOkms('CLI-LIST-A', 4));
    assert.equal((await keyfleet('rollout', 'start', running)).exitCode, 0);
    await setStatus(running, 0, ['updated']);
    const ready = await createOf('3.0', '100', await freshOkms('CLI-LIST-B', 3));

    const listed = await keyfleet('rollout', 'list', '--customer', 'acme');

    assert.equal(listed.exitCode, 0, listed.stderr);
    const lines = listed.stdout.trimEnd().split('\n');
    assert.deepEqual(lines.slice(0, 2), [`${ready}  kas 3.0  acme  ready  group -  updated 0/3  failed 0`, `${running}  kas 2.0  acme  running  group 1/2  updated 1/4  failed 0`]);
    for (const id of [running, ready]) assert.equal((await keyfleet('rollout', 'abort', id)).exitCode, 0);
  });

  test('rollout create refuses a malformed value with the API’s words, and exits 2', async () => {
    const run = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '10,5');
    const badWindow = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--window', '22:00');

    assert.deepEqual([run.exitCode, run.stderr], [2, "keyfleet: groups[1].percent: must be greater than the previous group's (10): percents are cumulative\n"]);
    assert.equal(badWindow.exitCode, 2);
    assert.match(badWindow.stderr, /^keyfleet: maintenance_window\.to: /);
  });

  test('rollout create --retry-policy stores the policy complete and show prints it; a bad one is exit 2 naming the field', async () => {
    const serials = await freshOkms('CLI-RETRY', 2);
    const created = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--serials', serials.join(','), '--retry-policy', '{"offers": 2, "backoff_polls": [5]}', '--json');
    assert.equal(created.exitCode, 0, created.stderr);
    const { rollout } = JSON.parse(created.stdout);
    assert.deepEqual(rollout.retry_policy, { offers: 2, backoff_polls: [5], max_backoff_polls: 32 });
    const shown = await keyfleet('rollout', 'show', String(rollout.id));
    assert.match(shown.stdout, /^retry policy: 2 offers, then held back 5 polls \(at most 32\)$/m);

    const refused: [string, string][] = [
      ['{"offers": -1}', 'keyfleet: --retry-policy: offers: must be >= 0\n'],
      ['{"offers": 3, "backoff_polls": [0]}', 'keyfleet: --retry-policy: backoff_polls.0: must be >= 1\n'],
      ['{"offers": 3, "colour": "red"}', 'keyfleet: --retry-policy: colour: not a field of the policy\n'],
    ];
    for (const [policy, stderr] of refused) {
      const run = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--serials', serials.join(','), '--retry-policy', policy);
      assert.deepEqual([run.exitCode, run.stderr], [2, stderr], policy);
    }
    const notJson = await keyfleet('rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--retry-policy', 'offers=3');
    assert.equal(notJson.exitCode, 2);
    assert.match(notJson.stderr, /^keyfleet: --retry-policy: expected a JSON object/);
    assert.equal((await keyfleet('rollout', 'abort', String(rollout.id))).exitCode, 0);
  });
});
