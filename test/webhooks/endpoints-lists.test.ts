import { after, before, describe } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, idKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const ENDPOINTS = '/api/v1/webhook-endpoints';
const URL = 'https://hooks.example/fleet';

let scopes = 0;

forEachDatabase('webhook endpoints and their deliveries, paged by cursor', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
  });
  after(() => t.close());

  /** A customer of its own, its token, and ids far above any the database hands out here. */
  async function freshCustomer() {
    const name = `endpoints-${++scopes}`;
    const token = await issueTestToken(t, { customer: name, scopes: ['okm:read', 'okm:write'] });
    return { token, customerId: (await findCustomerByName(t.db, name))!.id, base: 1_000_000 * scopes };
  }

  describe('endpoints', () => {
    cursorListContract('GET /api/v1/webhook-endpoints', async (): Promise<CursorListFixture> => {
      const { token, customerId, base } = await freshCustomer();
      return {
        t,
        url: ENDPOINTS,
        token,
        keyOf: (endpoint) => endpoint.id as number,
        keyAt: idKeyAt(base, 'asc'),
        add: async (ids) => {
          if (ids.length === 0) return;
          // Stored directly: the API takes at most 20 per customer, and the list is what is tested.
          await t.db
            .insertInto('webhook_endpoints')
            .values(ids.map((id) => ({ id: Number(id), customer_id: customerId, url: URL, host: 'hooks.example', event_types: '["okm.overdue"]', created_at: 1 })))
            .execute();
        },
        remove: async (id) => {
          await t.db.deleteFrom('webhook_endpoints').where('id', '=', Number(id)).execute();
        },
      };
    });
  });

  describe('deliveries of an endpoint', () => {
    cursorListContract('GET /api/v1/webhook-endpoints/{id}/deliveries', async (): Promise<CursorListFixture> => {
      const { token, customerId, base } = await freshCustomer();
      const endpoint = await t.db
        .insertInto('webhook_endpoints')
        .values({ customer_id: customerId, url: URL, host: 'hooks.example', event_types: '["okm.overdue"]', created_at: 1 })
        .returning('id')
        .executeTakeFirstOrThrow();
      return {
        t,
        url: `${ENDPOINTS}/${endpoint.id}/deliveries`,
        token,
        keyOf: (delivery) => Number(delivery.event_id),
        keyAt: idKeyAt(base, 'desc'),
        add: async (ids) => {
          if (ids.length === 0) return;
          await t.db
            .insertInto('fleet_event_deliveries')
            .values(
              ids.map((id) => ({
                id: Number(id),
                endpoint_id: endpoint.id,
                customer_id: customerId,
                url: URL,
                host: 'hooks.example',
                event_id: String(id),
                event_type: 'okm.overdue',
                payload: '{}',
                state: 'delivered',
                attempts: 1,
                next_attempt_at: 1,
                created_at: 1,
                delivered_at: 2,
              })),
            )
            .execute();
        },
        remove: async (id) => {
          await t.db.deleteFrom('fleet_event_deliveries').where('id', '=', Number(id)).execute();
        },
      };
    });
  });
});
