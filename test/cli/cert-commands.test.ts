import assert from 'node:assert/strict';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Db } from '../../src/db/database.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { createIntermediateCertificate } from '../../src/pki/x509.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import type { KeyRing } from '../../src/secrets/key-ring.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import type { TestDatabase } from '../helpers/databases.ts';

forEachDatabase('keyfleet cert commands', (kind) => {
  let store: TestStore;
  let database: TestDatabase;
  let db: Db;
  let keyRing: KeyRing;
  before(async () => {
    store = await openTestStore(kind);
    ({ database, db, keyRing } = store);
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(database.env, ...args);
  const writeFile = (name: string, content: string) => {
    const file = path.join(database.dataDir, name);
    fs.writeFileSync(file, content, { mode: 0o600 });
    return file;
  };

  test('cert create --json prints the new certificate for the customer as one JSON object', async () => {
    await keyfleet('customer', 'create', 'acme');

    const run = await keyfleet('cert', 'create', '--customer', 'acme', '--name', 'acme-main', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout.trim().split('\n').length, 1);
    const printed = JSON.parse(run.stdout) as Record<string, string>;
    assert.deepEqual(Object.keys(printed).sort(), ['certificate', 'customer', 'id', 'name', 'not_after', 'serial']);
    assert.equal(printed.name, 'acme-main');
    assert.equal(printed.customer, 'acme');
    assert.doesNotMatch(run.stdout, /PRIVATE KEY/);
  });

  test('cert export prints the intermediate, then the root that signed it', async () => {
    const run = await keyfleet('cert', 'export', 'acme-main');

    assert.equal(run.exitCode, 0, run.stderr);
    const pems = run.stdout.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    assert.equal(pems.length, 2);
    const [intermediate, root] = pems.map((pem) => new X509Certificate(pem));
    assert.match(intermediate!.subject, /CN=acme-main/);
    assert.ok(intermediate!.verify(root!.publicKey));
    assert.ok(root!.verify(root!.publicKey));
  });

  test('cert import accepts a root-signed intermediate with its key and refuses a mismatching key', async () => {
    const { root, privateKey } = await loadRootPrivateKey(db, keyRing);
    const offline = await createIntermediateCertificate({ certificatePem: root.certificatePem, privateKey }, { customer: 'acme', name: 'acme-offline' }, 30);
    const certFile = writeFile('offline.crt', offline.certificatePem + root.certificatePem);
    const keyFile = writeFile('offline.key', offline.privateKeyPem);
    const otherKeyFile = writeFile('other.key', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());

    const mismatch = await keyfleet('cert', 'import', '--customer', 'acme', '--name', 'acme-offline', '--cert', certFile, '--key', otherKeyFile);
    const imported = await keyfleet('cert', 'import', '--customer', 'acme', '--name', 'acme-offline', '--cert', certFile, '--key', keyFile, '--json');

    assert.notEqual(mismatch.exitCode, 0);
    assert.equal(mismatch.stdout, '');
    assert.equal(mismatch.stderr, 'keyfleet: --key: the private key does not match the certificate\n');
    assert.equal(imported.exitCode, 0, imported.stderr);
    assert.equal((JSON.parse(imported.stdout) as { serial: string }).serial, offline.serial);
  });

  test('cert commands fail with one line on stderr for a taken name (exit 4), an unknown certificate (exit 3, as JSON with --json) and a missing file', async () => {
    const taken = await keyfleet('cert', 'create', '--customer', 'acme', '--name', 'acme-main');
    const unknown = await keyfleet('cert', 'export', 'nope', '--json');
    const missingFile = await keyfleet('cert', 'import', '--customer', 'acme', '--name', 'x', '--cert', '/nonexistent.pem', '--key', '/nonexistent.key');

    assert.equal(taken.exitCode, 4);
    assert.equal(taken.stderr, 'keyfleet: certificate acme-main already exists\n');
    assert.equal(unknown.exitCode, 3);
    assert.equal(unknown.stderr, '{"error":{"code":"not_found","message":"certificate nope not found"}}\n');
    assert.equal(missingFile.exitCode, 1);
    assert.equal(missingFile.stderr, 'keyfleet: --cert: cannot read /nonexistent.pem (ENOENT)\n');
  });
});
