import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { markOverdueOkms } from '../../src/okm/overdue-repository.ts';
import { insertEndpoint } from '../../src/webhooks/endpoints-repository.ts';
import { emitFleetEvent } from '../../src/webhooks/fleet-events.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

/** The database handle with a counter of the statements it ran (results, since a subquery is transformed as a query of its own). */
function counted(db: Db): { db: Db; statements: () => number } {
  let statements = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements++;
      return args.result;
    },
  };
  return { db: db.withPlugin(counter), statements: () => statements };
}

const overdue = { type: 'okm.overdue', customerId: null, data: { serial_number: 'X' } } as const;

forEachDatabase('fleet events nobody subscribes to', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' })));
  after(() => t.close());

  test('with no endpoint, a thousand events cost one statement (the endpoint list, read once)', async () => {
    const { db, statements } = counted(t.db);

    for (let event = 0; event < 1000; event++) await emitFleetEvent(db, overdue);

    assert.ok(statements() <= 1, `${statements()} statements`);
  });

  test('with no OKM past due, the overdue sweep is one statement that marks nothing', async () => {
    const { db, statements } = counted(t.db);

    const marked = await markOverdueOkms(db, t.dialect, Date.now());

    assert.equal(marked, 0);
    assert.equal(statements(), 1);
  });

  test('an endpoint created in this process is seen by the next event; an event of a type it does not take still costs nothing', async () => {
    await insertEndpoint(t.db, { customerId: null, url: 'https://hooks.example/cost', eventTypes: ['okm.back_online'], now: Date.now() });
    const { db, statements } = counted(t.db);

    const ignored = await emitFleetEvent(db, overdue);
    const afterIgnored = statements();
    const queued = await emitFleetEvent(db, { ...overdue, type: 'okm.back_online' });

    assert.equal(ignored, 0);
    assert.equal(afterIgnored, 1, 'the endpoint list, read again after the change');
    assert.equal(queued, 1);
    assert.equal(statements(), 2, 'one INSERT for the subscribed event');
  });
});
