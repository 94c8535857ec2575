import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TableNode, UpdateQueryNode, type KyselyPlugin } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { createFleetPass, releaseLease } from '../../src/fleet/fleet-pass.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { insertEndpoint } from '../../src/webhooks/endpoints-repository.ts';
import { emitFleetEvent, endpointsChanged, type WebhookEvent } from '../../src/webhooks/fleet-events.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';

/**
 * The database handle with a counter of the statements it ran (results, since a subquery is
 * transformed as a query of its own), and the tables its UPDATE statements named.
 */
function counted(db: Db): { db: Db; statements: () => number; updated: string[] } {
  let statements = 0;
  const updated: string[] = [];
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      if (UpdateQueryNode.is(args.node) && args.node.table && TableNode.is(args.node.table)) updated.push(args.node.table.table.identifier.name);
      return args.node;
    },
    transformResult: async (args) => {
      statements++;
      return args.result;
    },
  };
  return { db: db.withPlugin(counter), statements: () => statements, updated };
}

/** One fleet pass by a runner of its own on the handle given (so that its statements are counted), which gives the lease up after. */
async function runPass(db: Db, t: TestApp, now = Date.now()): Promise<void> {
  const runner = createFleetPass(db, t.settings);
  assert.equal(await runner.runPass({ now: () => now }), true);
  await releaseLease(t.db, runner.holder);
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

  test('with no OKM past due, a fleet pass marks nothing: it updates no okms row, only its lease', async () => {
    await insertOkm(t.db, 'COST-PUNCTUAL', null, UNCONFIGURED_OKM, Date.now());
    await t.db.insertInto('okm_polls').values({ serial_number: 'COST-PUNCTUAL', last_sync_time: Date.now(), last_ip: '192.0.2.1', reported: '{}', install_code: null, status_queued_at: null }).execute();
    await t.db.updateTable('okms').set({ overdue_at: null }).where('serial_number', '=', 'COST-PUNCTUAL').execute();
    const { db, updated } = counted(t.db);

    await runPass(db, t);

    assert.deepEqual(
      updated.filter((table) => table !== 'background_passes'),
      [],
    );
    assert.equal((await t.db.selectFrom('okms').select('overdue_at').where('serial_number', '=', 'COST-PUNCTUAL').executeTakeFirstOrThrow()).overdue_at, null);
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

forEachDatabase('the fleet pass with endpoints subscribed', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' })));
  after(() => t.close());

  test('in one step it runs as many statements for 400 overdue OKMs as for 10, and queues each okm.overdue once to each endpoint that takes it: its customer’s and the deployment-wide one, not another customer’s', async () => {
    const customers = [await createTestCustomer(t, 'acme'), await createTestCustomer(t, 'beta')];
    const endpointOf = new Map<number | null, number>();
    for (const customerId of [customers[0]!.id, customers[1]!.id, null]) {
      endpointOf.set(customerId, await insertEndpoint(t.db, { customerId, url: `https://hooks.example/${customerId ?? 'all'}`, eventTypes: ['okm.overdue'], now: Date.now() }));
    }
    await insertEndpoint(t.db, { customerId: customers[0]!.id, url: 'https://hooks.example/other-types', eventTypes: ['okm.back_online'], now: Date.now() });
    const silentOkms = async (prefix: string, count: number) => {
      const serials = new Map<string, number>();
      for (let index = 0; index < count; index++) {
        const serial = `${prefix}-${index}`;
        const customerId = customers[index % 2]!.id;
        await insertOkm(t.db, serial, customerId, UNCONFIGURED_OKM, Date.now());
        serials.set(serial, customerId);
      }
      // Polled 4 hours ago: past 3 of any polling interval.
      const polledAt = Date.now() - 4 * 3_600_000;
      await t.db
        .insertInto('okm_polls')
        .values([...serials.keys()].map((serial) => ({ serial_number: serial, last_sync_time: polledAt, last_ip: '192.0.2.1', reported: '{}', install_code: null, status_queued_at: null })))
        .execute();
      await t.db.updateTable('okms').set({ overdue_at: null }).where('serial_number', 'in', [...serials.keys()]).execute();
      return serials;
    };
    const marks = async () => Number((await t.db.selectFrom('okms').select((eb) => eb.fn.countAll().as('n')).where('overdue_at', '>', 0).executeTakeFirstOrThrow()).n);
    const sweep = async () => {
      endpointsChanged(t.db);
      const before = await marks();
      const { db, statements } = counted(t.db);
      await runPass(db, t);
      return { marked: (await marks()) - before, statements: statements() };
    };

    const few = await silentOkms('FEW', 10);
    const fewSwept = await sweep();
    const many = await silentOkms('MANY', 400);
    const manySwept = await sweep();

    assert.deepEqual([fewSwept.marked, manySwept.marked], [10, 400]);
    assert.equal(manySwept.statements, fewSwept.statements, `${fewSwept.statements} statements for 10, ${manySwept.statements} for 400`);
    const rows = await t.db.selectFrom('fleet_event_deliveries').select(['endpoint_id', 'event_id', 'payload']).execute();
    const deliveries = new Map<string, { endpoints: number[]; eventIds: Set<string> }>();
    for (const row of rows) {
      const body = JSON.parse(row.payload) as WebhookEvent & { data: { serial_number: string } };
      assert.equal(body.id, row.event_id);
      const entry = deliveries.get(body.data.serial_number) ?? { endpoints: [], eventIds: new Set<string>() };
      deliveries.set(body.data.serial_number, entry);
      entry.endpoints.push(row.endpoint_id);
      entry.eventIds.add(row.event_id);
    }
    const expected = new Map([...few, ...many].map(([serial, customerId]) => [serial, [endpointOf.get(customerId)!, endpointOf.get(null)!].sort((a, b) => a - b)]));
    assert.deepEqual(new Map([...deliveries].map(([serial, entry]) => [serial, entry.endpoints.sort((a, b) => a - b)])), expected);
    assert.ok([...deliveries.values()].every((entry) => entry.eventIds.size === 1), 'one event, the same webhook-id at every endpoint');
    assert.equal(new Set(rows.map((row) => row.event_id)).size, 410);
  });
});
