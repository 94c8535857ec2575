import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Insertable } from 'kysely';
import * as initial from '../../src/db/migrations/0001_initial.ts';
import * as pki from '../../src/db/migrations/0002_pki.ts';
import * as apiKeys from '../../src/db/migrations/0003_api_keys.ts';
import * as dlock from '../../src/db/migrations/0004_dlock.ts';
import * as acl from '../../src/db/migrations/0005_acl.ts';
import * as statusEvents from '../../src/db/migrations/0006_status_events.ts';
import * as okmHardening from '../../src/db/migrations/0007_okm_hardening.ts';
import * as statusFanOut from '../../src/db/migrations/0008_status_fan_out.ts';
import * as dataKeys from '../../src/db/migrations/0009_data_keys.ts';
import * as okmClaims from '../../src/db/migrations/0010_okm_claims.ts';
import * as okmLastCorrection from '../../src/db/migrations/0011_okm_last_correction.ts';
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import type { OkmsTable } from '../../src/db/schema.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { settingsColumns } from '../../src/okm/repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';

const BEFORE_0011 = [initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims];

forEachDatabase('migration 0011_okm_last_correction', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('OKMs stored before it keep their rows, get no last correction, and their reported batch key and wireless key versions', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0011) await migration.up(store.db, context);
    const row = (serial: string, reported: Record<string, string> | null) =>
      ({
        ...settingsColumns(UNCONFIGURED_OKM),
        serial_number: serial,
        customer_id: null,
        created_at: 1,
        updated_at: 1,
        reported: reported === null ? null : JSON.stringify(reported),
      }) as Insertable<OkmsTable>;
    await store.db
      .insertInto('okms')
      .values([row('OKM-POLLED', { kasFirmware: '2.0.0', batchKeyFirmware: '1.2', wirelessKeyFirmware: '3.0' }), row('OKM-NEW', null)])
      .execute();

    await okmLastCorrection.up(store.db, context);

    const rows = await store.db
      .selectFrom('okms')
      .select(['serial_number', 'last_correction', 'batch_key_firmware_version', 'wireless_key_firmware_version'])
      .orderBy('serial_number')
      .execute();
    assert.deepEqual(rows, [
      { serial_number: 'OKM-NEW', last_correction: null, batch_key_firmware_version: null, wireless_key_firmware_version: null },
      { serial_number: 'OKM-POLLED', last_correction: null, batch_key_firmware_version: '1.2', wireless_key_firmware_version: '3.0' },
    ]);
  });
});
