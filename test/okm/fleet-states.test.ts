import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FLEET_STATES, fleetStateCondition, isInState, NEVER_POLLED, stateFactsOf, type StateColumns } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

/** Every combination of the columns an OKM's state is read from, each value a case of its own. */
const COMBINATIONS: StateColumns[] = [null, 'cacheMode'].flatMap((last_correction) =>
  [null, NEVER_POLLED, 1_700_000_000_000].flatMap((overdue_at) => [null, 'kasFirmware'].map((stuck_resolver) => ({ last_correction, overdue_at, stuck_resolver }))),
);

forEachDatabase("an OKM's state", (kind) => {
  let t: TestApp;
  const serialOf = (index: number) => `STATE-${String(index).padStart(2, '0')}`;
  before(async () => {
    t = await buildTestApp(kind);
    await t.db
      .insertInto('okms')
      .values(
        COMBINATIONS.map((columns, index) => ({
          ...columns,
          serial_number: serialOf(index),
          customer_id: null,
          auditing_enabled: 0,
          status_urls: '[]',
          stuck_since: columns.stuck_resolver === null ? null : 1_700_000_000_000,
          created_at: 0,
          updated_at: 0,
        })),
      )
      .execute();
  });
  after(() => t.close());

  test('the lists\' SQL condition and the in-memory form the fleet summary counts with agree on every combination of the state columns', async () => {
    for (const state of FLEET_STATES) {
      const rows = await t.db.selectFrom('okms').select('serial_number').where(fleetStateCondition(state)).orderBy('serial_number').execute();
      const expected = COMBINATIONS.flatMap((columns, index) => (isInState(state, stateFactsOf(columns)) ? [serialOf(index)] : []));
      assert.deepEqual(
        rows.map((row) => row.serial_number),
        expected,
        state,
      );
    }
  });
});
