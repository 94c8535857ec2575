import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { findCustomerByName } from '../../src/customers/repository.ts';
import type { Database } from '../../src/db/schema.ts';
import { listAcls, listAclSummariesByName } from '../../src/acl/repository.ts';
import type { AclSearch } from '../../src/acl/schemas.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, call, sampleAcl } from './helpers.ts';

const DEEP = 1_234;

/** Stores ACLs as a POST stores them, without its validation (the list reads ids and contents), in statements under both databases' parameter limits. */
async function storeAcls(t: TestApp, customerId: number, ids: readonly string[]): Promise<void> {
  for (let start = 0; start < ids.length; start += 500) {
    const slice = ids.slice(start, start + 500);
    await t.db.insertInto('acls').values(slice.map((id) => ({ id, customer_id: customerId, okm_serial: null, created_at: 1, updated_at: 1 }))).execute();
    await t.db.insertInto('acl_contents').values(slice.map((id) => ({ acl_id: id, users: '[]', locks: '[]', user_data: null, user_count: 0, lock_count: 0 }))).execute();
  }
}

forEachDatabase("the ACL list of contract §0.6 at depth (page / results_per_page / total_results)", (kind) => {
  let t: TestApp;
  let token: string;
  let customerId: number;
  const ids: string[] = [];
  const customer = 'deep';
  before(async () => {
    t = await buildTestApp(kind);
    token = await issueTestToken(t, { customer, scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    customerId = (await findCustomerByName(t.db, customer))!.id;
    ids.push(...Array.from({ length: DEEP }, () => randomUUID()));
    await storeAcls(t, customerId, ids);
    ids.sort();
    // Another customer's ACLs interleave in id order and must not count.
    const other = await issueTestToken(t, { customer: 'shallow', scopes: ['acl:read'] });
    assert.ok(other);
    await storeAcls(t, (await findCustomerByName(t.db, 'shallow'))!.id, Array.from({ length: 200 }, () => randomUUID()));
  });
  after(() => t.close());

  const list = (query: string) => call(t, 'GET', `${ACLS}?customer=${customer}${query}`, { token });
  const listedIds = (response: { json(): { data: { id: string }[] } }) => response.json().data.map((acl) => acl.id);

  test('page 40 of 30 a page holds the ACLs at positions 1 171–1 200 by id, with the total', async () => {
    const response = await list('&page=40&results_per_page=30');

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().pagination, { page: 40, results_per_page: '30', total_results: String(DEEP) });
    assert.deepEqual(listedIds(response), ids.slice(1170, 1200));
  });

  test('the last page holds the rest, and a page past it is empty with the total', async () => {
    const last = await list('&page=42&results_per_page=30');
    const past = await list('&page=43&results_per_page=30');

    assert.deepEqual(listedIds(last), ids.slice(1230));
    assert.deepEqual(past.json(), { message: 'Resource fetched successfully', pagination: { page: 43, results_per_page: '30', total_results: String(DEEP) }, data: [] });
  });

  test('total_results and a deep page follow creations and deletions', async () => {
    const created: string[] = [];
    for (let index = 0; index < 3; index++) {
      const acl = sampleAcl(customer, { users: 1, locks: 1 });
      assert.equal((await call(t, 'POST', ACLS, { token, payload: acl })).statusCode, 201);
      created.push(acl.id);
    }
    const deleted = [ids[5]!, ids[700]!, ids[1201]!, created[0]!];
    for (const id of deleted) assert.equal((await call(t, 'DELETE', `${ACLS}/${id}?customer=${customer}`, { token })).statusCode, 204);
    const now = [...ids, ...created].filter((id) => !deleted.includes(id)).sort();

    const response = await list('&page=40&results_per_page=30');

    assert.equal(response.json().pagination.total_results, String(DEEP + 3 - 4));
    assert.deepEqual(listedIds(response), now.slice(1170, 1200));
  });
});

// SQLite's plans, as its EXPLAIN QUERY PLAN reports them: the page's ids come from the index alone.
describe('a deep page of the ACL list on SQLite reads the customer\'s index, not the ACLs', () => {
  let t: TestApp;
  let customerId: number;
  before(async () => {
    t = await buildTestApp('sqlite');
    await issueTestToken(t, { customer: 'planned', scopes: ['acl:read'] });
    customerId = (await findCustomerByName(t.db, 'planned'))!.id;
    await storeAcls(t, customerId, Array.from({ length: 3000 }, () => randomUUID()));
    await sql`analyze`.execute(t.db);
  });
  after(() => t.close());

  /** SQLite's plan of each statement listAcls runs for the search and page. */
  async function plansOfList(search: AclSearch, page: number): Promise<string[][]> {
    const statements: CompiledQuery[] = [];
    const logged = new Kysely<Database>({ dialect: t.dialect.createDialect(), log: (event) => void statements.push(event.query) });
    try {
      await listAcls(logged, customerId, search, page, 30);
    } finally {
      await logged.destroy();
    }
    const plans: string[][] = [];
    for (const statement of statements) {
      const plan = await t.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]));
      plans.push(plan.rows.map((row) => row.detail));
    }
    return plans;
  }

  for (const [search, index] of [
    [{ user_id: 42 }, 'acl_users_customer_user_idx (customer_id=? AND user_id=?)'],
    [{ lock: 'door-1' }, 'acl_locks_customer_lock_lower_idx (customer_id=? AND <expr>=?)'],
    [{ name_contains: 'store' }, 'acls_customer_name_idx (customer_id=?)'],
  ] as const) {
    test(`a search by ${Object.keys(search)[0]} reads ${index.split(' ')[0]}, never a whole table`, async () => {
      const plans = await plansOfList(search, 2);
      const all = plans.flat().join('\n');

      assert.ok(all.includes(`COVERING INDEX ${index}`), all);
      assert.ok(!plans.flat().some((step) => /^SCAN (acls|acl_contents|acl_users|acl_locks)\b/.test(step)), all);
    });
  }

  test('the summaries by name, after a cursor in the named ACLs and in the unnamed ones, read ranges of acls_customer_name_idx, never a whole table', async () => {
    for (const after of [[0, 'store 0500', 'x'], [1, '', 'x']] as [number, string, string][]) {
      const statements: CompiledQuery[] = [];
      const logged = new Kysely<Database>({ dialect: t.dialect.createDialect(), log: (event) => void statements.push(event.query) });
      try {
        await listAclSummariesByName(logged, customerId, {}, { after, limit: 50 });
      } finally {
        await logged.destroy();
      }
      const plans: string[] = [];
      for (const statement of statements) {
        const plan = await t.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]));
        plans.push(...plan.rows.map((row) => row.detail));
      }
      const all = plans.join('\n');
      assert.ok(/SEARCH acls USING COVERING INDEX acls_customer_name_idx \(customer_id=\? AND name_key/.test(all), all);
      assert.ok(!plans.some((step) => /^SCAN (acls|acl_contents)\b/.test(step) || /USE TEMP B-TREE FOR ORDER BY/.test(step)), all);
    }
  });

  test('the ids of page 40 and the total are searches of acls_customer_idx alone; only the page\'s rows are read', async () => {
    const plans = await plansOfList({}, 40);
    const [page, count] = plans;
    const all = plans.flat().join('\n');

    assert.equal(plans.length, 2, all);
    assert.ok(page!.includes('SEARCH acls USING COVERING INDEX acls_customer_idx (customer_id=?)'), all);
    assert.ok(page!.some((step) => /^SEARCH acls USING INDEX sqlite_autoindex_acls_1 \(id=\?\)$/.test(step)), all);
    assert.deepEqual(count, ['SEARCH acls USING COVERING INDEX acls_customer_idx (customer_id=?)']);
    // (SQLite may scan the few customers for each of the page's rows: 2 here; never the ACLs or their contents.)
    assert.ok(!plans.flat().some((step) => step.startsWith('SCAN acls') || step.startsWith('SCAN acl_contents')), all);
  });
});
