import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { Customer } from '../../src/customers/repository.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { recordPendingCall } from '../../src/okm/pending-repository.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { runKeyfleet } from '../helpers/cli.ts';

let serials = 0;
const newSerial = () => `AUDCLI-${process.pid}-${++serials}`;

/** The actor of every change a command makes: the account that runs it, with no request behind it. */
function assertMadeByTheCommandLine(entry: AuditEntry): void {
  const { username } = os.userInfo();
  assert.deepEqual(entry.actor, { kind: 'cli', id: username, name: username });
  assert.deepEqual([entry.request_id, entry.ip, entry.user_agent], [null, null, null]);
}

forEachDatabase('audit entries of OKM and webhook secret commands', (kind) => {
  let store: TestStore;
  let acme: Customer;
  before(async () => {
    store = await openTestStore(kind);
    const migrated = await runKeyfleet(store.database.env, 'migrate');
    assert.equal(migrated.exitCode, 0, migrated.stderr);
    acme = await createCustomer(store.db, 'acme');
  });
  after(() => store.close());

  const keyfleet = async (...args: string[]) => runKeyfleet(store.database.env, ...args);
  const succeeds = async (...args: string[]) => {
    const run = await keyfleet(...args);
    assert.equal(run.exitCode, 0, run.stderr);
    return run.stdout;
  };

  async function pendingOkm(): Promise<string> {
    const serial = newSerial();
    await recordPendingCall(store.db, serial, { now: Date.now(), ip: '203.0.113.7', firmwareVersion: '2.1.0' });
    return serial;
  }

  /** Every stored entry's before and after, as the text they are stored in. */
  async function storedEntryTexts(): Promise<string> {
    await chainAllPendingEntries(store.db);
    const rows = await store.db.selectFrom('audit_entries').select(['before_json', 'after_json']).execute();
    return rows.map((row) => `${row.before_json} ${row.after_json}`).join('\n');
  }

  test('okm accept appends okm.accepted, made by the command line, for the customer named or none', async () => {
    const forAcme = await pendingOkm();
    const forNone = await pendingOkm();
    const start = await lastAuditId(store.db);

    await succeeds('okm', 'accept', forAcme, '--customer', 'acme');
    await succeeds('okm', 'accept', forNone);

    const [acmes, nobodys, ...more] = await auditEntriesAfter(store.db, start);
    assert.equal(more.length, 0);
    for (const entry of [acmes!, nobodys!]) {
      assert.equal(entry.action, 'okm.accepted');
      assert.equal(entry.before, null);
      assertMadeByTheCommandLine(entry);
    }
    assert.deepEqual([acmes!.entity, acmes!.customer, acmes!.after], [{ type: 'okm', id: forAcme }, 'acme', { customer: 'acme' }]);
    assert.deepEqual([nobodys!.entity, nobodys!.customer, nobodys!.after], [{ type: 'okm', id: forNone }, null, { customer: null }]);
    await assertAuditChainIntact(store.db);
  });

  test('okm token appends okm.device_token_issued with the issue times, never the token', async () => {
    const serial = newSerial();
    await insertOkm(store.db, serial, acme.id, UNCONFIGURED_OKM, Date.now());
    const start = await lastAuditId(store.db);

    const first = JSON.parse(await succeeds('okm', 'token', serial, '--json')) as { token: string; issued_at: string };
    const second = JSON.parse(await succeeds('okm', 'token', serial, '--json')) as { token: string; issued_at: string };

    const [firstIssue, secondIssue, ...more] = await auditEntriesAfter(store.db, start);
    assert.equal(more.length, 0);
    for (const entry of [firstIssue!, secondIssue!]) {
      assert.equal(entry.action, 'okm.device_token_issued');
      assert.deepEqual([entry.entity, entry.customer], [{ type: 'okm', id: serial }, 'acme']);
      assertMadeByTheCommandLine(entry);
    }
    assert.deepEqual([firstIssue!.before, firstIssue!.after], [{ device_token_issued_at: null }, { device_token_issued_at: first.issued_at }]);
    assert.deepEqual([secondIssue!.before, secondIssue!.after], [{ device_token_issued_at: first.issued_at }, { device_token_issued_at: second.issued_at }]);
    const stored = await storedEntryTexts();
    assert.ok(!stored.includes(first.token) && !stored.includes(second.token) && !stored.includes('kf_okm_'));
    await assertAuditChainIntact(store.db);
  });

  test("webhook secret rotate appends webhook_secret.rotated naming the secret's owner, never a secret; show appends nothing", async () => {
    const start = await lastAuditId(store.db);

    const shown = JSON.parse(await succeeds('webhook', 'secret', 'show', '--customer', 'acme', '--json')) as { secret: string };
    const afterShow = await lastAuditId(store.db);
    const customers = JSON.parse(await succeeds('webhook', 'secret', 'rotate', '--customer', 'acme', '--json')) as { secret: string; previous_valid_until: string };
    const deployments = JSON.parse(await succeeds('webhook', 'secret', 'rotate', '--overlap', '0s', '--json')) as { secret: string; previous_valid_until: null };

    assert.equal(afterShow, start);
    const [customerRotation, deploymentRotation, ...more] = await auditEntriesAfter(store.db, start);
    assert.equal(more.length, 0);
    for (const entry of [customerRotation!, deploymentRotation!]) {
      assert.equal(entry.action, 'webhook_secret.rotated');
      assert.equal(entry.before, null);
      assertMadeByTheCommandLine(entry);
    }
    assert.deepEqual(
      [customerRotation!.entity, customerRotation!.customer, customerRotation!.after],
      [{ type: 'webhook_secret', id: `customer:${acme.id}` }, 'acme', { previous_valid_until: customers.previous_valid_until }],
    );
    assert.deepEqual([deploymentRotation!.entity, deploymentRotation!.customer, deploymentRotation!.after], [{ type: 'webhook_secret', id: 'deployment' }, null, { previous_valid_until: null }]);
    const stored = await storedEntryTexts();
    assert.ok(![shown.secret, customers.secret, deployments.secret].some((secret) => stored.includes(secret)));
    assert.ok(!stored.includes('whsec_'));
    await assertAuditChainIntact(store.db);
  });

  test('a command that fails appends nothing', async () => {
    const pending = await pendingOkm();
    const start = await lastAuditId(store.db);

    const failed = [
      await keyfleet('okm', 'accept', newSerial()),
      await keyfleet('okm', 'accept', pending, '--customer', 'nobody'),
      await keyfleet('okm', 'token', newSerial()),
      await keyfleet('okm', 'token', pending),
      await keyfleet('webhook', 'secret', 'rotate', '--customer', 'nobody'),
      await keyfleet('webhook', 'secret', 'rotate', '--overlap', 'soon'),
    ];

    assert.ok(failed.every((run) => run.exitCode !== 0), failed.map((run) => run.stderr).join(''));
    assert.deepEqual(await auditEntriesAfter(store.db, start), []);
  });
});
