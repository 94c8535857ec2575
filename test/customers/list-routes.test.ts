import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, textKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const CUSTOMERS = '/api/v1/customers';

forEachDatabase('Customer list for pickers (GET /api/v1/customers)', (kind) => {
  let t: TestApp;
  let adminToken: string;
  let acmeToken: string;
  const list = (token: string | undefined, query = '') =>
    t.app.inject({ method: 'GET', url: `${CUSTOMERS}${query}`, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const names = (body: { data: { name: string }[] }) => body.data.map((customer) => customer.name);

  before(async () => {
    t = await buildTestApp(kind);
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
    acmeToken = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] });
    for (const name of ['globex', 'Initech', 'acme-west']) await createCustomer(t.db, name);
  });
  after(() => t.close());

  test('an operator lists every customer by name, only names', async () => {
    const response = await list(adminToken);

    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.deepEqual(names(body).filter((name) => ['acme', 'acme-west', 'globex', 'Initech'].includes(name)).sort(), ['Initech', 'acme', 'acme-west', 'globex'].sort());
    assert.deepEqual(Object.keys(body.data[0]), ['name']);
    assert.equal(body.next_cursor, null);
  });

  test("a customer's token lists its own customer only, with or without a search", async () => {
    assert.deepEqual(names((await list(acmeToken)).json()), ['acme']);
    assert.deepEqual(names((await list(acmeToken, '?name_contains=acme')).json()), ['acme']);
    assert.deepEqual(names((await list(acmeToken, '?name_contains=globex')).json()), []);
  });

  test('name_contains finds names that contain the text whatever its case, and takes % and _ literally', async () => {
    assert.deepEqual(names((await list(adminToken, '?name_contains=ACME')).json()), ['acme', 'acme-west']);
    assert.deepEqual(names((await list(adminToken, '?name_contains=nitec')).json()), ['Initech']);
    assert.deepEqual(names((await list(adminToken, '?name_contains=_')).json()), []);
  });

  test('without a credential: 401; a malformed search or limit: 400', async () => {
    assert.equal((await list(undefined)).statusCode, 401);
    assert.equal((await list(adminToken, '?name_contains=a%25b')).statusCode, 400);
    assert.equal((await list(adminToken, `?name_contains=${'a'.repeat(65)}`)).statusCode, 400);
    assert.equal((await list(adminToken, '?limit=501')).statusCode, 400);
    assert.equal((await list(adminToken, '?customer=acme')).statusCode, 400);
  });

  describe('cursor paging', () => {
    let scopes = 0;
    cursorListContract('GET /api/v1/customers', async (): Promise<CursorListFixture> => {
      const scope = `cl${++scopes}x`;
      return {
        t,
        url: `${CUSTOMERS}?name_contains=${scope}`,
        token: adminToken,
        keyOf: (customer) => customer.name as string,
        keyAt: textKeyAt(`${scope}-`),
        add: async (keys) => {
          for (const key of keys) await createCustomer(t.db, String(key));
        },
        remove: async (key) => {
          await t.db.deleteFrom('customers').where('name', '=', String(key)).execute();
        },
      };
    });
  });
});
