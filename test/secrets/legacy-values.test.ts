import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { DEPLOYMENT_SECRET, ensureDeploymentSecret } from '../../src/dlock/key-certificate.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { encrypt } from '../../src/secrets/sealed-box.ts';
import { forEachDatabase, openTestStore } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { serveProcess } from '../helpers/server-process.ts';

forEachDatabase('values sealed before key ids', (kind) => {
  test('they open, a wrong key is refused before any data key is made, and serve reseals them under the data key', async () => {
    const store = await openTestStore(kind);
    try {
      const { db, settings } = store;
      await migrateToLatest(db, dialectFor(settings));
      const masterKey = loadMasterKey(settings);
      const secret = randomBytes(32);
      const legacy = `v1.${encrypt(masterKey.key, secret, DEPLOYMENT_SECRET.associatedData({ slot: 'deployment' }))}`;
      await db.insertInto('dlock_secret').values({ slot: 'deployment', secret_sealed: legacy, created_at: Date.now() }).execute();

      const wrongRing = createKeyRing(db, { key: randomBytes(32), source: 'MASTER_KEY' });
      await assert.rejects(wrongRing.refresh(), /the values already in the database do not open with master key [0-9a-f]{16} \(MASTER_KEY\)/);
      assert.equal((await db.selectFrom('data_keys').select('kid').execute()).length, 0);
      assert.deepEqual(await ensureDeploymentSecret(db, createKeyRing(db, masterKey)), secret);

      const server = serveProcess(store.database.env);
      try {
        await server.listening;
        const stored = await eventually(async () => {
          const row = await db.selectFrom('dlock_secret').select('secret_sealed').executeTakeFirstOrThrow();
          return row.secret_sealed.startsWith('v2.') && row.secret_sealed;
        });
        const current = await db.selectFrom('data_keys').select('kid').where('state', '=', 'current').executeTakeFirstOrThrow();
        assert.ok(stored.startsWith(`v2.${current.kid}.`));
      } finally {
        await server.stop();
      }
      assert.deepEqual(await ensureDeploymentSecret(db, createKeyRing(db, masterKey)), secret);
    } finally {
      await store.close();
    }
  });
});
