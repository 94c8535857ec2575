import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
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
import * as fleetEvents from '../../src/db/migrations/0012_fleet_events.ts';
import type { MigrationContext } from '../../src/db/migrations/migration-context.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';

const BEFORE_0012 = [initial, pki, apiKeys, dlock, acl, statusEvents, okmHardening, statusFanOut, dataKeys, okmClaims, okmLastCorrection];

forEachDatabase('migration 0012_fleet_events', (kind) => {
  let store: TestStore;
  before(async () => (store = await openTestStore(kind)));
  after(() => store.close());

  test('an OKM that polled before it is due 3 intervals after its last poll and not marked; one that never polled waits for its enrolment', async () => {
    const context: MigrationContext = { kind };
    for (const migration of BEFORE_0012) await migration.up(store.db, context);
    await sql`INSERT INTO okms (serial_number, auditing_enabled, status_urls, polling_interval, last_sync_time, created_at, updated_at)
      VALUES ('OKM-OWN', 0, '[]', 60, 1000000, 1, 1), ('OKM-FLEET', 0, '[]', NULL, 2000000, 1, 1), ('OKM-NEVER', 0, '[]', NULL, NULL, 1, 1)`.execute(store.db);

    await fleetEvents.up(store.db, context);

    // due_by is a column of the schema 0012 made, not of today's (0023 dropped it).
    const { rows } = await sql<{ serial_number: string; due_by: number | null; overdue_at: number | null }>`SELECT serial_number, due_by, overdue_at FROM okms ORDER BY serial_number`.execute(store.db);
    assert.deepEqual(rows, [
      { serial_number: 'OKM-FLEET', due_by: 2_000_000 + 450_000, overdue_at: null },
      { serial_number: 'OKM-NEVER', due_by: null, overdue_at: 0 },
      { serial_number: 'OKM-OWN', due_by: 1_000_000 + 180_000, overdue_at: null },
    ]);
  });
});
