import { after, before, describe } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import type { RolloutState } from '../../src/rollouts/model.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, idKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const ROLLOUTS = '/api/v1/rollouts';

/**
 * A rollout row as creating one stores it (no members: the list reads the rollouts and their
 * group counts), with an id of the test's choosing, which the table's type leaves to the database.
 */
const rolloutRow = (id: number, customerId: number, state: RolloutState) => ({
  id,
  customer_id: customerId,
  kind: 'kas',
  version: '2.0',
  filter: null,
  group_percents: '[10,100]',
  success_threshold: 95,
  error_threshold: 5,
  update_timeout_ms: 3_600_000,
  auto_advance: 1,
  state,
  state_reason: null,
  current_group: -1,
  start_at: null,
  window_from: null,
  window_to: null,
  approval_required: 0,
  approved_by: null,
  approved_at: null,
  created_by: 'test',
  created_at: 1,
  updated_at: 1,
  started_at: null,
  finished_at: null,
});

let scopes = 0;

forEachDatabase('rollouts, paged by cursor, newest first', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
  });
  after(() => t.close());

  for (const [name, query, listed, other] of [
    ["a customer's rollouts", '', 'ready', undefined],
    ['state=aborted', '?state=aborted', 'aborted', 'ready'],
  ] as const) {
    describe(name, () => {
      cursorListContract(`GET /api/v1/rollouts, ${name}`, async (): Promise<CursorListFixture> => {
        const customer = `rollouts-${++scopes}`;
        const token = await issueTestToken(t, { customer, scopes: ['okm:read'] });
        const customerId = (await findCustomerByName(t.db, customer))!.id;
        // Ids far above any the database hands out here; a rollout the filter leaves out just below each listed one.
        const base = 10_000_000 * scopes;
        return {
          t,
          url: `${ROLLOUTS}${query}`,
          token,
          keyOf: (rollout) => rollout.id as number,
          keyAt: (position) => idKeyAt(base, 'desc')(position) * 2,
          add: async (ids) => {
            if (ids.length === 0) return;
            const rows = ids.map((id) => rolloutRow(Number(id), customerId, listed));
            if (other !== undefined) rows.push(...ids.map((id) => rolloutRow(Number(id) - 1, customerId, other)));
            await t.db.insertInto('rollouts').values(rows).execute();
          },
          remove: async (id) => {
            await t.db.deleteFrom('rollouts').where('id', '=', Number(id)).execute();
          },
        };
      });
    });
  }
});
