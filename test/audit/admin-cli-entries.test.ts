import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { Actor } from '../../src/auth/actor.ts';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { createIntermediateCertificate, createRootCertificate } from '../../src/pki/x509.ts';
import { loadMasterKey, masterKeyFingerprint } from '../../src/secrets/master-key.ts';
import { RETIRE_AFTER_MS } from '../../src/secrets/rotate-master-key.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId } from '../helpers/audit.ts';
import { runKeyfleet, type CliRun } from '../helpers/cli.ts';

const { username } = os.userInfo();
const CLI_ACTOR: Actor = { kind: 'cli', id: username, name: username };

/** A certificate as its audit entry describes it. */
function certificateFacts(pem: string) {
  const certificate = new X509Certificate(pem);
  return { subject: certificate.subject, serial: certificate.serialNumber.toLowerCase(), not_after: new Date(certificate.validTo).toISOString(), fingerprint: certificate.fingerprint256 };
}

/** A migrated database of its own, and `keyfleet` run against it. */
async function openStore(kind: Parameters<typeof openTestStore>[0]) {
  const store = await openTestStore(kind);
  await migrateToLatest(store.db, dialectFor(store.settings));
  return store;
}

/** Fails if any stored entry's before or after holds one of the values. */
async function assertNoEntryHolds(store: TestStore, values: readonly string[]): Promise<void> {
  await chainAllPendingEntries(store.db);
  const stored = await store.db.selectFrom('audit_entries').select(['seq', 'before_json', 'after_json']).execute();
  assert.ok(stored.length > 0);
  for (const row of stored) {
    const text = `${row.before_json ?? ''}${row.after_json ?? ''}`;
    assert.doesNotMatch(text, /PRIVATE KEY/, `entry ${row.seq}`);
    for (const value of values) assert.ok(!text.includes(value), `entry ${row.seq} holds a secret`);
  }
}

/** The first line of a PEM's base64: a private key's, were it stored without its armour. */
const pemBody = (pem: string) => pem.trim().split('\n')[1]!;

/** The master key in every form it is written in. */
function masterKeyForms(store: TestStore): string[] {
  const { key } = loadMasterKey(store.settings);
  return [key.toString('hex'), key.toString('base64')];
}

forEachDatabase('audit entries of keyfleet commands', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openStore(kind);
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);

  /** Runs a command that must succeed and append one entry by the command line; gives its output and the entry. */
  async function changeBy(...args: string[]): Promise<{ run: CliRun; entry: AuditEntry }> {
    const start = await lastAuditId(store.db);
    const run = await keyfleet(...args);
    assert.equal(run.exitCode, 0, run.stderr);
    const entries = await auditEntriesAfter(store.db, start);
    assert.equal(entries.length, 1, `${args.join(' ')}: ${JSON.stringify(entries.map((entry) => entry.action))}`);
    const [entry] = entries;
    assert.deepEqual(entry!.actor, CLI_ACTOR);
    assert.deepEqual([entry!.request_id, entry!.ip, entry!.user_agent], [null, null, null]);
    return { run, entry: entry! };
  }

  test('customer create and update record customer.created and customer.updated with the settings that changed', async () => {
    const created = await changeBy('customer', 'create', 'acme');
    const zoned = await changeBy('customer', 'update', 'acme', '--time-zone', 'Europe/Berlin');
    const policy = await changeBy('customer', 'update', 'acme', '--time-zone', 'Europe/Berlin', '--firmware-retry-policy', '{"offers": 2}');

    assert.deepEqual(
      [created.entry, zoned.entry, policy.entry].map((entry) => [entry.action, entry.customer, entry.entity]),
      [
        ['customer.created', 'acme', { type: 'customer', id: 'acme' }],
        ['customer.updated', 'acme', { type: 'customer', id: 'acme' }],
        ['customer.updated', 'acme', { type: 'customer', id: 'acme' }],
      ],
    );
    assert.equal(created.entry.before, null);
    assert.deepEqual(created.entry.after, { name: 'acme', time_zone: null });
    assert.deepEqual([zoned.entry.before, zoned.entry.after], [{ time_zone: null }, { time_zone: 'Europe/Berlin' }]);
    assert.deepEqual(
      [policy.entry.before, policy.entry.after],
      [{ firmware_retry_policy: null }, { firmware_retry_policy: { offers: 2, backoff_polls: [1, 2, 4, 8], max_backoff_polls: 32 } }],
    );
    await assertAuditChainIntact(store.db);
  });

  test('apikey create and revoke record api_key.created and api_key.revoked, never the key; a second revoke records nothing', async () => {
    const created = await changeBy('apikey', 'create', '--customer', 'acme', '--label', 'mobile app', '--json');
    const { id, key } = JSON.parse(created.run.stdout) as { id: string; key: string };
    const revoked = await changeBy('apikey', 'revoke', id);

    assert.deepEqual([created.entry.action, created.entry.customer, created.entry.entity], ['api_key.created', 'acme', { type: 'api_key', id }]);
    assert.equal(created.entry.before, null);
    const { created_at: createdAt, ...after } = created.entry.after as { created_at: string };
    assert.deepEqual(after, { customer: 'acme', label: 'mobile app' });
    assert.ok(!Number.isNaN(Date.parse(createdAt)));
    assert.deepEqual([revoked.entry.action, revoked.entry.customer, revoked.entry.entity], ['api_key.revoked', 'acme', { type: 'api_key', id }]);
    assert.deepEqual(revoked.entry.before, { revoked_at: null });
    assert.ok(!Number.isNaN(Date.parse((revoked.entry.after as { revoked_at: string }).revoked_at)));

    const start = await lastAuditId(store.db);
    assert.equal((await keyfleet('apikey', 'revoke', id)).exitCode, 0);
    assert.deepEqual(await auditEntriesAfter(store.db, start), []);
    const hash = await store.db.selectFrom('api_keys').select('secret_hash').where('id', '=', id).executeTakeFirstOrThrow();
    await assertNoEntryHolds(store, [key, key.slice(-43), hash.secret_hash]);
    await assertAuditChainIntact(store.db);
  });

  test('cert create and import record certificate.created and certificate.imported: subject, serial, expiry and fingerprint, never the key', async () => {
    const created = await changeBy('cert', 'create', '--customer', 'acme', '--name', 'acme-main', '--json');
    const printed = JSON.parse(created.run.stdout) as { certificate: string };

    const { root, privateKey } = await loadRootPrivateKey(store.db, store.keyRing);
    const offline = await createIntermediateCertificate({ certificatePem: root.certificatePem, privateKey }, { customer: 'acme', name: 'acme-offline' }, 30);
    const certFile = path.join(store.database.dataDir, 'offline.crt');
    const keyFile = path.join(store.database.dataDir, 'offline.key');
    fs.writeFileSync(certFile, offline.certificatePem, { mode: 0o600 });
    fs.writeFileSync(keyFile, offline.privateKeyPem, { mode: 0o600 });
    const imported = await changeBy('cert', 'import', '--customer', 'acme', '--name', 'acme-offline', '--cert', certFile, '--key', keyFile);

    assert.deepEqual([created.entry.action, created.entry.customer, created.entry.entity], ['certificate.created', 'acme', { type: 'certificate', id: 'acme-main' }]);
    assert.equal(created.entry.before, null);
    assert.deepEqual(created.entry.after, { name: 'acme-main', customer: 'acme', ...certificateFacts(printed.certificate) });
    assert.deepEqual([imported.entry.action, imported.entry.customer, imported.entry.entity], ['certificate.imported', 'acme', { type: 'certificate', id: 'acme-offline' }]);
    assert.deepEqual(imported.entry.after, { name: 'acme-offline', customer: 'acme', ...certificateFacts(offline.certificatePem) });

    const sealed = await store.db.selectFrom('intermediate_certificates').select('private_key_sealed').execute();
    await assertNoEntryHolds(store, [...sealed.map((row) => row.private_key_sealed), pemBody(offline.privateKeyPem), ...masterKeyForms(store)]);
    await assertAuditChainIntact(store.db);
  });

  test('master-key rotate and retire record master_key.rotated and master_key.retired, named by the data key, with no key material', async () => {
    const fingerprint = masterKeyFingerprint(loadMasterKey(store.settings).key);
    const rotated = await changeBy('master-key', 'rotate', '--yes', '--json');
    const rotation = JSON.parse(rotated.run.stdout) as { data_key: string; previous_data_key: string; master_key: string };

    assert.deepEqual([rotated.entry.action, rotated.entry.customer, rotated.entry.entity], ['master_key.rotated', null, { type: 'master_key', id: rotation.data_key }]);
    assert.deepEqual(rotated.entry.before, { data_key: rotation.previous_data_key, master_key: fingerprint });
    assert.deepEqual(rotated.entry.after, { data_key: rotation.data_key, previous_data_key: rotation.previous_data_key, master_key: fingerprint });

    // As if the servers had had their time to re-read the key ring.
    const previousSince = Date.now() - RETIRE_AFTER_MS - 1_000;
    await store.db.updateTable('data_keys').set({ previous_since: previousSince }).where('kid', '=', rotation.previous_data_key).execute();
    const retired = await changeBy('master-key', 'retire', '--yes');

    assert.deepEqual([retired.entry.action, retired.entry.customer, retired.entry.entity], ['master_key.retired', null, { type: 'master_key', id: rotation.previous_data_key }]);
    assert.deepEqual(retired.entry.before, { state: 'previous', previous_since: new Date(previousSince).toISOString() });
    assert.deepEqual(retired.entry.after, { state: 'retired' });

    const wrapped = await store.db.selectFrom('data_keys').select('wrapped_key').where('wrapped_key', 'is not', null).execute();
    await assertNoEntryHolds(store, [...wrapped.map((row) => row.wrapped_key!), ...masterKeyForms(store)]);
    await assertAuditChainIntact(store.db);
  });

  test('signing-key rotate and retire record signing_key.rotated and signing_key.retired, named by the kid', async () => {
    const rotated = await changeBy('signing-key', 'rotate', '--grace', '1h', '--json');
    const rotation = JSON.parse(rotated.run.stdout) as { kid: string; previous_kid: string; previous_verifies_until: string };
    const retired = await changeBy('signing-key', 'retire', '--', rotation.previous_kid);

    assert.deepEqual([rotated.entry.action, rotated.entry.customer, rotated.entry.entity], ['signing_key.rotated', null, { type: 'signing_key', id: rotation.kid }]);
    assert.deepEqual(rotated.entry.before, { active: rotation.previous_kid });
    assert.deepEqual(rotated.entry.after, { active: rotation.kid, previous: rotation.previous_kid, previous_verifies_until: rotation.previous_verifies_until });
    assert.deepEqual([retired.entry.action, retired.entry.customer, retired.entry.entity], ['signing_key.retired', null, { type: 'signing_key', id: rotation.previous_kid }]);
    assert.deepEqual(retired.entry.before, { verifies_until: rotation.previous_verifies_until });
    assert.ok(Date.parse((retired.entry.after as { verifies_until: string }).verifies_until) < Date.parse(rotation.previous_verifies_until));

    const sealed = await store.db.selectFrom('signing_keys').select('private_jwk_sealed').execute();
    await assertNoEntryHolds(store, [...sealed.map((row) => row.private_jwk_sealed), ...masterKeyForms(store)]);
    await assertAuditChainIntact(store.db);
  });

  test('refused commands append nothing', async () => {
    const active = await store.db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirstOrThrow();
    const rootFile = path.join(store.database.dataDir, 'another-root.crt');
    const rootKeyFile = path.join(store.database.dataDir, 'another-root.key');
    const anotherRoot = await createRootCertificate(30);
    fs.writeFileSync(rootFile, anotherRoot.certificatePem, { mode: 0o600 });
    fs.writeFileSync(rootKeyFile, anotherRoot.privateKeyPem, { mode: 0o600 });
    const start = await lastAuditId(store.db);

    const runs = await Promise.all([
      keyfleet('customer', 'create', 'acme'),
      keyfleet('customer', 'update', 'nobody', '--time-zone', 'UTC'),
      keyfleet('customer', 'update', 'acme', '--time-zone', 'Mars/Olympus_Mons'),
      keyfleet('apikey', 'create', '--customer', 'nobody'),
      keyfleet('apikey', 'revoke', '0123456789abcdef'),
      keyfleet('cert', 'create', '--customer', 'acme', '--name', 'acme-main'),
      keyfleet('cert', 'import-root', '--cert', rootFile, '--key', rootKeyFile),
      keyfleet('signing-key', 'retire', '--', active.kid),
      keyfleet('master-key', 'retire', '--yes'),
    ]);

    assert.deepEqual(
      runs.map((run) => run.exitCode),
      [4, 3, 2, 2, 3, 4, 4, 2, 1],
      runs.map((run) => run.stderr).join(''),
    );
    assert.deepEqual(await auditEntriesAfter(store.db, start), []);
    await assertAuditChainIntact(store.db);
  });

  test('cert import-root records certificate.root_imported, named by the root\'s serial, for no customer', async () => {
    const fresh = await openStore(kind);
    try {
      const root = await createRootCertificate(30);
      const certFile = path.join(fresh.database.dataDir, 'root.crt');
      const keyFile = path.join(fresh.database.dataDir, 'root.key');
      fs.writeFileSync(certFile, root.certificatePem, { mode: 0o600 });
      fs.writeFileSync(keyFile, root.privateKeyPem, { mode: 0o600 });
      const start = await lastAuditId(fresh.db);

      const run = await runKeyfleet(fresh.database.env, 'cert', 'import-root', '--cert', certFile, '--key', keyFile);

      assert.equal(run.exitCode, 0, run.stderr);
      const entries = await auditEntriesAfter(fresh.db, start);
      assert.deepEqual(
        entries.map((entry) => [entry.action, entry.customer, entry.entity, entry.actor]),
        [['certificate.root_imported', null, { type: 'certificate', id: root.serial }, CLI_ACTOR]],
      );
      assert.equal(entries[0]!.before, null);
      assert.deepEqual(entries[0]!.after, certificateFacts(root.certificatePem));
      const sealed = await fresh.db.selectFrom('pki_root').select('private_key_sealed').executeTakeFirstOrThrow();
      await assertNoEntryHolds(fresh, [sealed.private_key_sealed, pemBody(root.privateKeyPem), ...masterKeyForms(fresh)]);
      await assertAuditChainIntact(fresh.db);
    } finally {
      await fresh.close();
    }
  });
});
