import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { masterKeyFingerprint } from '../../src/secrets/master-key.ts';
import { SEALED_COLUMNS } from '../../src/key-ring.ts';
import { countSealedNotUnder } from '../../src/secrets/reseal.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

/** A customer and an intermediate, as the commands would make them. */
async function seedCertificate(store: TestStore): Promise<void> {
  await migrateToLatest(store.db, dialectFor(store.settings));
  await createCustomer(store.db, 'acme');
  await createIntermediate(store.db, store.keyRing, store.settings, { customer: 'acme', name: 'acme-main' });
}

forEachDatabase('keyfleet master-key rotate and retire', (kind) => {
  test('without --yes each says what it would do and exits 2; with it, rotate reseals and retire waits for the servers', async () => {
    const store = await openTestStore(kind);
    try {
      const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);
      await seedCertificate(store);

      const [unconfirmed, retireUnconfirmed, rotation] = await Promise.all([
        keyfleet('master-key', 'rotate'),
        keyfleet('master-key', 'retire'),
        keyfleet('master-key', 'rotate', '--yes', '--json'),
      ]);
      const [retireEarly, tokenIssue] = await Promise.all([keyfleet('master-key', 'retire', '--yes'), keyfleet('token', 'issue', '--scope', 'admin')]);

      assert.equal(unconfirmed.exitCode, 2);
      assert.equal(unconfirmed.stderr.trim().split('\n').length, 1, unconfirmed.stderr);
      assert.match(unconfirmed.stderr, /master-key rotate would make a new data key current and reseal every private key and secret; run it again with --yes/);
      assert.equal(rotation.exitCode, 0, rotation.stderr);
      const result = JSON.parse(rotation.stdout) as { data_key: string; previous_data_key: string; resealed: Record<string, number> };
      assert.equal(result.resealed['intermediate_certificates.private_key_sealed'], 1);
      assert.equal(await countSealedNotUnder(store.db, SEALED_COLUMNS, result.data_key), 0);
      assert.equal(retireUnconfirmed.exitCode, 2);
      assert.equal(retireEarly.exitCode, 1);
      assert.match(retireEarly.stderr, new RegExp(`data key ${result.previous_data_key} stopped being current at`));
      assert.equal(tokenIssue.exitCode, 0, tokenIssue.stderr);
    } finally {
      await store.close();
    }
  });

  test('with a new master key, commands with the old key are refused naming the new one, and work with it', async () => {
    const store = await openTestStore(kind);
    try {
      const env = store.database.env;
      const keyfleet = (extra: Record<string, string>, ...args: string[]) => runKeyfleet({ ...env, ...extra }, ...args);
      await seedCertificate(store);
      const newKey = randomBytes(32);
      const keyFile = path.join(store.settings.dataDir, 'master.key');
      const oldKeyFile = env.MASTER_KEY ? undefined : fs.readFileSync(keyFile, 'utf8');
      const newKeyFile = path.join(store.settings.dataDir, 'new.key');
      fs.writeFileSync(newKeyFile, newKey.toString('hex'));

      const rotation = await keyfleet({}, 'master-key', 'rotate', '--new-key-file', newKeyFile, '--yes', '--json');

      assert.equal(rotation.exitCode, 0, rotation.stderr);
      assert.equal(JSON.parse(rotation.stdout).master_key, masterKeyFingerprint(newKey));
      const withNewKey: Record<string, string> = env.MASTER_KEY ? { MASTER_KEY: newKey.toString('hex') } : {};
      const [accepted, refused] = await Promise.all([keyfleet(withNewKey, 'token', 'issue', '--scope', 'admin'), keyfleet({}, 'token', 'issue', '--scope', 'admin')]);
      assert.equal(accepted.exitCode, 0, accepted.stderr);
      if (env.MASTER_KEY) {
        assert.equal(refused.exitCode, 1);
        assert.match(refused.stderr, new RegExp(`database expects master key ${masterKeyFingerprint(newKey)}, MASTER_KEY is ${masterKeyFingerprint(Buffer.from(env.MASTER_KEY, 'hex'))}`));
      } else {
        assert.equal(fs.readFileSync(keyFile, 'utf8'), newKey.toString('hex'));
        assert.equal(fs.readFileSync(`${keyFile}.previous`, 'utf8'), oldKeyFile);
        assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
        assert.equal(fs.statSync(`${keyFile}.previous`).mode & 0o777, 0o600);
      }
    } finally {
      await store.close();
    }
  });
});
