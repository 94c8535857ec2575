import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createIntermediate, type IntermediateCertificate } from '../../src/pki/intermediates.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { FIRMWARE, call } from '../okm/admin-helpers.ts';

const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';
const SHA256 = 'cd'.repeat(32);

/** Fails if any stored entry's before or after holds one of the values. */
async function assertNoEntryHolds(t: TestApp, values: readonly string[]): Promise<void> {
  await chainAllPendingEntries(t.db);
  const stored = await t.db.selectFrom('audit_entries').select(['seq', 'before_json', 'after_json']).execute();
  for (const row of stored) {
    const text = `${row.before_json ?? ''}${row.after_json ?? ''}`;
    for (const value of values) assert.ok(!text.includes(value), `entry ${row.seq} holds a secret`);
  }
}

/** The only entry appended after `start`. */
async function onlyEntryAfter(t: TestApp, start: number): Promise<AuditEntry> {
  const entries = await auditEntriesAfter(t.db, start);
  assert.equal(entries.length, 1, JSON.stringify(entries.map((entry) => entry.action)));
  return entries[0]!;
}

forEachDatabase('audit entries of DLock and firmware changes', (kind) => {
  let t: TestApp;
  let apiKey: { id: string; key: string };
  let intermediate: IntermediateCertificate;
  let releaser: string;
  let serials = 0;
  let versions = 0;
  const nextSerial = () => `AUDIT-LOCK-${kind}-${++serials}`;
  const nextVersion = () => `6.${++versions}`;

  const dlock = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'GET', url: string, payload?: object, key = apiKey.key) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${key}`, 'user-agent': 'lock-app/2.0' }, ...(payload === undefined ? {} : { payload }) });
  const enrolment = (serial: string, certificate = 'acme-main') => ({ serial_no: serial, type: 'padlock', certificate, enrolment_code: ENROLMENT_CODE, base64: false });
  const upload = (firmwareKind: string, version: string, file: Buffer) =>
    call(t, 'PUT', `${FIRMWARE}/${firmwareKind}/${version}`, { token: releaser, payload: file, headers: { 'content-type': 'application/octet-stream' } });

  before(async () => {
    t = await buildTestApp(kind);
    await createCustomer(t.db, 'acme');
    await createCustomer(t.db, 'globex');
    intermediate = await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'globex', name: 'globex-main' });
    apiKey = await createApiKey(t.db, { customer: 'acme' });
    releaser = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  test('enrolling a lock records dlock.enrolled by its API key: the lock and its certificate, never its key; deleting it records dlock.deleted', async () => {
    const serial = nextSerial();
    const start = await lastAuditId(t.db);

    const enrolled = await dlock('POST', '/v1/dlock', enrolment(serial));
    assert.equal(enrolled.statusCode, 200, enrolled.body);
    const certificate = enrolled.json().data.key;
    const enrolledEntry = await onlyEntryAfter(t, start);

    assert.equal(enrolledEntry.action, 'dlock.enrolled');
    assert.deepEqual(enrolledEntry.entity, { type: 'dlock', id: serial });
    assert.equal(enrolledEntry.customer, 'acme');
    assert.deepEqual(enrolledEntry.actor, { kind: 'api_key', id: apiKey.id, name: `API key ${apiKey.id} of acme` });
    assert.equal(enrolledEntry.user_agent, 'lock-app/2.0');
    assert.equal(enrolledEntry.ip, '127.0.0.1');
    assert.match(enrolledEntry.request_id!, /.+/);
    assert.equal(enrolledEntry.before, null);
    const { key: _lockKey, ...publicPart } = certificate;
    assert.deepEqual(enrolledEntry.after, {
      serial_no: serial,
      type: 'padlock',
      customer: 'acme',
      certificate: { name: 'acme-main', serial: intermediate.serial },
      key_certificate: {
        format: 'dlock-key/v1',
        valid_from: new Date(certificate.valid * 1000).toISOString(),
        valid_until: new Date(certificate.expires * 1000).toISOString(),
        fingerprint: createHash('sha256').update(canonical(publicPart)).digest('hex'),
      },
    });

    const deletedFrom = await lastAuditId(t.db);
    const deleted = await dlock('DELETE', `/v1/dlock/${serial}`);
    assert.equal(deleted.statusCode, 204);
    const deletion = await onlyEntryAfter(t, deletedFrom);
    assert.equal(deletion.action, 'dlock.deleted');
    assert.deepEqual(deletion.entity, { type: 'dlock', id: serial });
    assert.equal(deletion.customer, 'acme');
    assert.equal(deletion.actor.kind, 'api_key');
    assert.equal(deletion.actor.id, apiKey.id);
    assert.deepEqual(deletion.before, enrolledEntry.after);
    assert.equal(deletion.after, null);

    await assertNoEntryHolds(t, [certificate.key, Buffer.from(certificate.key, 'base64').toString('hex'), apiKey.key, apiKey.key.slice(-43), ENROLMENT_CODE]);
    await assertAuditChainIntact(t.db);
  });

  test('DLock calls that change nothing append nothing: refused enrolments and deletions, reads, and every method answered 405', async () => {
    const taken = nextSerial();
    assert.equal((await dlock('POST', '/v1/dlock', enrolment(taken))).statusCode, 200);
    const start = await lastAuditId(t.db);

    const answers = [
      await dlock('POST', '/v1/dlock', enrolment(taken)),
      await dlock('POST', '/v1/dlock', enrolment(nextSerial(), 'globex-main')),
      await dlock('POST', '/v1/dlock', enrolment(nextSerial()), 'kf_live_0123456789abcdef' + 'A'.repeat(43)),
      await dlock('DELETE', '/v1/dlock/NO-SUCH-LOCK'),
      await dlock('GET', `/v1/dlock/${taken}`),
      await dlock('GET', '/v1/certificates/acme-main'),
      ...(await Promise.all(['PUT', 'PATCH', 'DELETE'].map((method) => dlock(method as 'PUT', '/v1/dlock', enrolment(nextSerial()))))),
      ...(await Promise.all(['POST', 'PUT', 'PATCH'].map((method) => dlock(method as 'POST', `/v1/dlock/${taken}`, enrolment(taken))))),
    ];

    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [400, 403, 401, 404, 200, 200, 405, 405, 405, 405, 405, 405],
    );
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
  });

  test('adding a URL release records firmware.added by the token, for no customer', async () => {
    const version = nextVersion();
    const start = await lastAuditId(t.db);

    const added = await call(t, 'POST', FIRMWARE, { token: releaser, payload: { kind: 'kas', version, url: `https://firmware.example/kas/${version}.bin`, sha256: SHA256 } });

    assert.equal(added.statusCode, 201, added.body);
    const entry = await onlyEntryAfter(t, start);
    assert.equal(entry.action, 'firmware.added');
    assert.deepEqual(entry.entity, { type: 'firmware', id: `kas/${version}` });
    assert.equal(entry.customer, null);
    assert.equal(entry.actor.kind, 'token');
    assert.equal(entry.before, null);
    assert.deepEqual(entry.after, { kind: 'kas', version, source: 'url', url: `https://firmware.example/kas/${version}.bin`, sha256: SHA256, size: null });
    await assertNoEntryHolds(t, [releaser]);
    await assertAuditChainIntact(t.db);
  });

  test('an uploaded file records firmware.added with its size and hash; setting, changing and clearing the latest record firmware.latest_set; deleting records firmware.deleted', async () => {
    const [first, second] = [nextVersion(), nextVersion()];
    const file = Buffer.from(`firmware ${first}`);
    const start = await lastAuditId(t.db);

    const uploaded = await upload('batch_key', first, file);
    await upload('batch_key', second, Buffer.from(`firmware ${second}`));
    const setFirst = await call(t, 'PUT', `${FIRMWARE}/batch_key/latest`, { token: releaser, payload: { version: first } });
    const setSecond = await call(t, 'PUT', `${FIRMWARE}/batch_key/latest`, { token: releaser, payload: { version: second } });
    const cleared = await call(t, 'PUT', `${FIRMWARE}/batch_key/latest`, { token: releaser, payload: { version: null } });
    const deleted = await call(t, 'DELETE', `${FIRMWARE}/batch_key/${first}`, { token: releaser });

    assert.deepEqual([uploaded.statusCode, setFirst.statusCode, setSecond.statusCode, cleared.statusCode, deleted.statusCode], [201, 200, 200, 200, 204]);
    const entries = await auditEntriesAfter(t.db, start);
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.entity.id, entry.customer, entry.actor.kind]),
      [
        ['firmware.added', `batch_key/${first}`, null, 'token'],
        ['firmware.added', `batch_key/${second}`, null, 'token'],
        ['firmware.latest_set', 'batch_key', null, 'token'],
        ['firmware.latest_set', 'batch_key', null, 'token'],
        ['firmware.latest_set', 'batch_key', null, 'token'],
        ['firmware.deleted', `batch_key/${first}`, null, 'token'],
      ],
    );
    const release = { kind: 'batch_key', version: first, source: 'file', sha256: createHash('sha256').update(file).digest('hex'), size: file.length };
    assert.deepEqual(entries[0]!.after, release);
    assert.deepEqual(
      entries.slice(2, 5).map((entry) => [entry.before, entry.after]),
      [
        [{ version: null }, { version: first }],
        [{ version: first }, { version: second }],
        [{ version: second }, { version: null }],
      ],
    );
    assert.deepEqual(entries[5]!.before, release);
    assert.equal(entries[5]!.after, null);
    assert.ok(entries.every((entry) => entry.entity.type === 'firmware'));
    await assertNoEntryHolds(t, [releaser]);
    await assertAuditChainIntact(t.db);
  });

  test('refused firmware calls append nothing: a taken version, the latest deleted, an unknown latest, a missing release', async () => {
    const version = nextVersion();
    await upload('wireless_key', version, Buffer.from('wireless'));
    await call(t, 'PUT', `${FIRMWARE}/wireless_key/latest`, { token: releaser, payload: { version } });
    const start = await lastAuditId(t.db);

    const answers = [
      await upload('wireless_key', version, Buffer.from('again')),
      await call(t, 'POST', FIRMWARE, { token: releaser, payload: { kind: 'wireless_key', version, url: 'https://firmware.example/w.bin', sha256: SHA256 } }),
      await call(t, 'DELETE', `${FIRMWARE}/wireless_key/${version}`, { token: releaser }),
      await call(t, 'PUT', `${FIRMWARE}/wireless_key/latest`, { token: releaser, payload: { version: '99.99' } }),
      await call(t, 'DELETE', `${FIRMWARE}/wireless_key/99.98`, { token: releaser }),
      await upload('wireless_key', nextVersion(), Buffer.alloc(0)),
    ];

    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [409, 409, 409, 400, 404, 400],
    );
    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
  });

  test('an upload whose entry fails to commit leaves neither the release nor its file nor the entry', async () => {
    const version = nextVersion();
    const start = await lastAuditId(t.db);
    await withFailureAfterEachAuditEntry(t.db, kind, async () => {
      const failed = await upload('kas', version, Buffer.alloc(3 * 1024 * 1024 + 5, 7));
      assert.equal(failed.statusCode, 500);
    });

    assert.deepEqual(await auditEntriesAfter(t.db, start), []);
    assert.equal((await call(t, 'GET', `${FIRMWARE}/kas/${version}`, { token: releaser })).statusCode, 404);
    const chunks = await t.db.selectFrom('firmware_chunks').select('seq').where('kind', '=', 'kas').where('version', '=', version).execute();
    assert.deepEqual(chunks, []);
    await assertAuditChainIntact(t.db);
  });
});

/** RFC 8785 canonical JSON of the strings, integers and objects a key certificate holds, written here rather than taken from the issuing code. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([member, item]) => `${JSON.stringify(member)}:${canonical(item)}`).join(',')}}`;
}
