import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DIVIDING_STATES, dividingStateOf, FLEET_STATES, fleetStateCondition, isInState, NEVER_POLLED, stateFactsOf, type StateColumns } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';

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

  test("each OKM record's and drift report's state is the one of never polled, drifting and in step whose list holds it", async () => {
    const authorization = `Bearer ${await issueTestToken(t, { scopes: ['admin'] })}`;
    const listed = new Map<string, string[]>();
    for (const state of DIVIDING_STATES) {
      const response = await t.app.inject({ url: `/api/v1/okms?state=${state}&limit=100`, headers: { authorization } });
      assert.equal(response.statusCode, 200, response.body);
      for (const okm of response.json<{ data: { serial_number: string }[] }>().data) listed.set(okm.serial_number, [...(listed.get(okm.serial_number) ?? []), state]);
    }
    for (const [index, columns] of COMBINATIONS.entries()) {
      const serial = serialOf(index);
      const record = await t.app.inject({ url: `/api/v1/okms/${serial}`, headers: { authorization } });
      const report = await t.app.inject({ url: `/api/v1/okms/${serial}/drift`, headers: { authorization } });
      const state = record.json<{ data: { state: string } }>().data.state;
      assert.ok(listed.get(serial)?.includes(state), `${JSON.stringify(columns)}: ${state}, listed in ${listed.get(serial)?.join(', ')}`);
      assert.equal(report.json<{ data: { state: string } }>().data.state, state, JSON.stringify(columns));
      // Never polled with a last correction is a row no poll writes: the only one two of these lists hold.
      if (!(columns.overdue_at === NEVER_POLLED && columns.last_correction !== null)) assert.deepEqual(listed.get(serial), [state], JSON.stringify(columns));
    }
  });

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

test('the dividing state is one the OKM is in, and the only one for every state a poll or the fleet pass leaves', () => {
  for (const columns of COMBINATIONS) {
    const facts = stateFactsOf(columns);
    assert.ok(isInState(dividingStateOf(facts), facts), JSON.stringify(columns));
    if (columns.overdue_at === NEVER_POLLED && columns.last_correction !== null) continue;
    assert.deepEqual(
      DIVIDING_STATES.filter((state) => isInState(state, facts)),
      [dividingStateOf(facts)],
      JSON.stringify(columns),
    );
  }
});
