import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import { recordPendingCall } from '../../src/okm/pending-repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { OKMS, call, claim, devicePoll, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';

const CODE = '12345678';

/** The whole configuration of an OKM created with nothing set: what a creation records after and a deletion before. */
const UNCONFIGURED = {
  cache_mode: null,
  key_checkout_window: null,
  auditing_enabled: false,
  asset_list: null,
  users_assets: null,
  polling_interval: null,
  firmware: { kas: null, batch_key: null, wireless_key: null },
  subscribe_urls: { status: [] },
};

/** What every test checks of an entry: its action, the OKM it names, its customer, and who made it through which request. */
function assertEntry(entry: AuditEntry | undefined, expected: { action: string; serial: string; customer: string | null; before: unknown; after: unknown }) {
  assert.ok(entry, `no entry for ${expected.action}`);
  assert.deepEqual(
    { action: entry.action, entity: entry.entity, customer: entry.customer, before: entry.before, after: entry.after },
    { action: expected.action, entity: { type: 'okm', id: expected.serial }, customer: expected.customer, before: expected.before, after: expected.after },
  );
  assert.equal(entry.actor.kind, 'token');
  assert.equal(entry.ip, '127.0.0.1');
  assert.match(entry.request_id!, /.+/);
}

forEachDatabase('audit entries of OKM changes', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  /** An OKM that polled with the installer code and that no customer holds. */
  async function enrolledOkm(): Promise<string> {
    const serial = uniqueSerial('AUD');
    assert.equal((await devicePoll(t, serial, `?installCode=${CODE}`)).statusCode, 204);
    return serial;
  }

  /** Every stored entry's before and after, as the text they are stored in. */
  async function storedEntryTexts(): Promise<string> {
    await chainAllPendingEntries(t.db);
    const rows = await t.db.selectFrom('audit_entries').select(['before_json', 'after_json']).execute();
    return rows.map((row) => `${row.before_json} ${row.after_json}`).join('\n');
  }

  test('a PUT that creates, a PATCH, a PUT that replaces and a DELETE each append one entry: the whole configuration, then the fields changed, then what was deleted', async () => {
    const serial = uniqueSerial('AUD');
    const start = await lastAuditId(t.db);

    const created = await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: {}, headers: { 'user-agent': 'okm-audit/1.0' } });
    const patched = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 60, firmware: { kas: null } } });
    const replaced = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { cache_mode: 2, key_checkout_window: { time: 300, contact: 'open' } } });
    const deleted = await call(t, 'DELETE', `${OKMS}/${serial}`, { token: tokens.acmeWrite });

    assert.deepEqual([created.statusCode, patched.statusCode, replaced.statusCode, deleted.statusCode], [201, 200, 200, 204]);
    const [creation, patch, replacement, deletion, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(creation, { action: 'okm.configured', serial, customer: 'acme', before: null, after: UNCONFIGURED });
    assert.equal(creation!.user_agent, 'okm-audit/1.0');
    assertEntry(patch, { action: 'okm.configured', serial, customer: 'acme', before: { polling_interval: null }, after: { polling_interval: 60 } });
    assertEntry(replacement, {
      action: 'okm.configured',
      serial,
      customer: 'acme',
      before: { cache_mode: null, key_checkout_window: null, polling_interval: 60 },
      after: { cache_mode: 2, key_checkout_window: { time: 300, contact: 'open' }, polling_interval: null },
    });
    assertEntry(deletion, {
      action: 'okm.deleted',
      serial,
      customer: 'acme',
      before: { ...UNCONFIGURED, cache_mode: 2, key_checkout_window: { time: 300, contact: 'open' } },
      after: null,
    });
    await assertAuditChainIntact(t.db);
  });

  test('a PUT that gives an unassigned OKM to the customer it acts for records the customer among the fields changed', async () => {
    const serial = await enrolledOkm();
    const start = await lastAuditId(t.db);

    const put = await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { auditing_enabled: true } });

    assert.equal(put.statusCode, 201);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(entry, { action: 'okm.configured', serial, customer: 'acme', before: { customer: null, auditing_enabled: false }, after: { customer: 'acme', auditing_enabled: true } });
    await assertAuditChainIntact(t.db);
  });

  test('an operator assigning an OKM and taking it back appends okm.assigned each time; the entry of one taken back is the previous customer\'s', async () => {
    const serial = await enrolledOkm();
    const start = await lastAuditId(t.db);

    const assigned = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });
    const released = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: null } });

    assert.deepEqual([assigned.statusCode, released.statusCode], [200, 200]);
    const [assignment, release, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(assignment, { action: 'okm.assigned', serial, customer: 'acme', before: { customer: null }, after: { customer: 'acme' } });
    assertEntry(release, { action: 'okm.assigned', serial, customer: 'acme', before: { customer: 'acme' }, after: { customer: null } });
    await assertAuditChainIntact(t.db);
  });

  test('a claim appends okm.claimed for the claiming customer, never the installer code; a failed claim appends nothing', async () => {
    const serial = await enrolledOkm();
    const start = await lastAuditId(t.db);

    const failed = await claim(t, tokens.acmeWrite, serial, '87654321');
    const afterFailure = await lastAuditId(t.db);
    const claimed = await claim(t, tokens.acmeWrite, serial, CODE);

    assert.deepEqual([failed.statusCode, claimed.statusCode], [404, 200]);
    assert.equal(afterFailure, start);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(entry, { action: 'okm.claimed', serial, customer: 'acme', before: { customer: null }, after: { customer: 'acme' } });
    assert.ok(!(await storedEntryTexts()).includes(CODE));
    await assertAuditChainIntact(t.db);
  });

  test('a queued message appends okm.message_queued with its id and type only, never its payload', async () => {
    const serial = uniqueSerial('AUD');
    await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: {} });
    const start = await lastAuditId(t.db);

    const queued = await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'open-door', payload: { door_code: 'payload-d00r-c0de' } } });

    assert.equal(queued.statusCode, 201);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(entry, { action: 'okm.message_queued', serial, customer: 'acme', before: null, after: { id: queued.json().data.id, type: 'open-door' } });
    assert.ok(!(await storedEntryTexts()).includes('payload-d00r-c0de'));
    await assertAuditChainIntact(t.db);
  });

  test('each device token issued appends okm.device_token_issued with when the replaced one and the new one were issued, never a token', async () => {
    const serial = uniqueSerial('AUD');
    await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: {} });
    const start = await lastAuditId(t.db);

    const first = await call(t, 'POST', `${OKMS}/${serial}/device-token`, { token: tokens.admin });
    const second = await call(t, 'POST', `${OKMS}/${serial}/device-token`, { token: tokens.admin });

    assert.deepEqual([first.statusCode, second.statusCode], [201, 201]);
    const [firstIssue, secondIssue, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    const firstIssuedAt = first.json().data.issued_at as string;
    assertEntry(firstIssue, { action: 'okm.device_token_issued', serial, customer: 'acme', before: { device_token_issued_at: null }, after: { device_token_issued_at: firstIssuedAt } });
    assertEntry(secondIssue, {
      action: 'okm.device_token_issued',
      serial,
      customer: 'acme',
      before: { device_token_issued_at: firstIssuedAt },
      after: { device_token_issued_at: second.json().data.issued_at },
    });
    const stored = await storedEntryTexts();
    for (const issued of [first, second]) assert.ok(!stored.includes(issued.json().data.token as string));
    assert.ok(!stored.includes('kf_okm_'));
    await assertAuditChainIntact(t.db);
  });

  test('accepting a pending OKM appends okm.accepted for the customer it is accepted for', async () => {
    const serial = uniqueSerial('AUD');
    await recordPendingCall(t.db, serial, { now: Date.now(), ip: '203.0.113.9', firmwareVersion: '2.1.0' });
    const start = await lastAuditId(t.db);

    const accepted = await call(t, 'POST', `/api/v1/pending-okms/${serial}/accept`, { token: tokens.admin, payload: { customer: 'acme' } });

    assert.equal(accepted.statusCode, 201);
    const [entry, ...more] = await auditEntriesAfter(t.db, start);
    assert.equal(more.length, 0);
    assertEntry(entry, { action: 'okm.accepted', serial, customer: 'acme', before: null, after: { customer: 'acme' } });
    await assertAuditChainIntact(t.db);
  });

  test('refused and failed requests append nothing', async () => {
    const unassigned = await enrolledOkm();
    const betas = uniqueSerial('AUD');
    await call(t, 'PUT', `${OKMS}/${betas}?customer=beta`, { token: tokens.admin, payload: {} });
    const pendingSerial = uniqueSerial('AUD');
    await recordPendingCall(t.db, pendingSerial, { now: Date.now(), ip: '203.0.113.9', firmwareVersion: null });
    const missing = uniqueSerial('AUD');
    const start = await lastAuditId(t.db);

    const refused = [
      await call(t, 'PUT', `${OKMS}/${unassigned}`, { token: tokens.acmeWrite, payload: {} }),
      await call(t, 'PUT', `${OKMS}/${betas}?customer=acme`, { token: tokens.admin, payload: {} }),
      await call(t, 'PUT', `${OKMS}/${betas}`, { token: tokens.acmeRead, payload: {} }),
      // Refused after the OKM's row was inserted, in the same transaction: neither the OKM nor an entry stays.
      await call(t, 'PUT', `${OKMS}/${missing}`, { token: tokens.admin, payload: { firmware: { kas: '9.9.9' } } }),
      await call(t, 'PATCH', `${OKMS}/${betas}`, { token: tokens.acmeWrite, payload: { polling_interval: 60 } }),
      await call(t, 'PATCH', `${OKMS}/${betas}`, { token: tokens.betaWrite, payload: { key_checkout_window: { time: 60 } } }),
      await call(t, 'DELETE', `${OKMS}/${betas}`, { token: tokens.acmeWrite }),
      await call(t, 'PUT', `${OKMS}/${unassigned}/customer`, { token: tokens.admin, payload: { customer: 'nobody' } }),
      await call(t, 'PUT', `${OKMS}/${unassigned}/customer`, { token: tokens.acmeWrite, payload: { customer: 'acme' } }),
      await call(t, 'POST', `${OKMS}/${betas}/claim`, { token: tokens.acmeWrite, payload: { install_code: CODE } }),
      await call(t, 'POST', `${OKMS}/${betas}/messages`, { token: tokens.acmeWrite, payload: { type: 'open-door' } }),
      await call(t, 'POST', `${OKMS}/${missing}/device-token`, { token: tokens.admin }),
      await call(t, 'POST', `${OKMS}/${pendingSerial}/device-token`, { token: tokens.admin }),
      await call(t, 'POST', `${OKMS}/${betas}/device-token`, { token: tokens.betaWrite }),
      await call(t, 'POST', `/api/v1/pending-okms/${missing}/accept`, { token: tokens.admin, payload: {} }),
      await call(t, 'POST', `/api/v1/pending-okms/${pendingSerial}/accept`, { token: tokens.admin, payload: { customer: 'nobody' } }),
    ];

    assert.deepEqual(
      refused.map((response) => response.statusCode),
      [409, 409, 403, 400, 409, 400, 404, 400, 403, 404, 404, 404, 404, 403, 404, 400],
    );
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    assert.equal(await t.db.selectFrom('okms').select('serial_number').where('serial_number', '=', missing).executeTakeFirst(), undefined);
  });

  test('device polls and audit records posted by OKMs append nothing', async () => {
    const serial = uniqueSerial('AUD');
    await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: { polling_interval: 30 } });
    const start = await lastAuditId(t.db);

    const firstPoll = await devicePoll(t, serial, `?installCode=${CODE}`);
    const nextPoll = await devicePoll(t, serial);
    const unknownPoll = await devicePoll(t, uniqueSerial('AUD'));
    const audit = await t.app.inject({ method: 'POST', url: `${t.settings.auditUrl}/${serial}`, payload: [{ event: 'open' }] });

    assert.ok([firstPoll, nextPoll, unknownPoll].every((poll) => poll.statusCode < 300), [firstPoll, nextPoll, unknownPoll].map((poll) => poll.statusCode).join());
    assert.ok(audit.statusCode < 300, `${audit.statusCode} ${audit.body}`);
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
  });
});
