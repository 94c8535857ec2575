import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { createCustomer } from '../../src/customers/repository.ts';
import type { Database } from '../../src/db/schema.ts';
import { keepPageBuckets } from '../../src/db/page-buckets.ts';
import { PAGED_LISTS } from '../../src/db/paged-lists.ts';
import { listOkms, type OkmListFilter } from '../../src/okm/admin-repository.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

// SQLite's plans: its ANALYZE statistics are what misled it (PostgreSQL's record the share of NULLs).
describe('OKM list pages on SQLite read through indexes once the database is analyzed', () => {
  let t: TestApp;
  let customerId: number;
  before(async () => {
    t = await buildTestApp('sqlite', { PAGE_BUCKET_KEEPER_INTERVAL_MS: '0' });
    customerId = (await createCustomer(t.db, 'plans')).id;
    const okms = Array.from({ length: 6000 }, (_, index) => ({
      serial_number: `PL-${String(index).padStart(5, '0')}`,
      customer_id: customerId,
      auditing_enabled: 0,
      status_urls: '[]',
      last_sync_time: index % 10 === 0 ? null : 1,
      last_correction: index % 2 === 0 ? 'kasDateTime' : null,
      firmware_version: ['2.1.0', '2.2.0', '2.3.0'][index % 3]!,
      created_at: 0,
      updated_at: 0,
    }));
    // Most ACLs are linked to no OKM: their okm_serial is NULL.
    const acls = Array.from({ length: 3000 }, (_, index) => ({ id: `plan-acl-${index}`, customer_id: customerId, okm_serial: null, created_at: 0, updated_at: 0 }));
    for (let start = 0; start < okms.length; start += 500) await t.db.insertInto('okms').values(okms.slice(start, start + 500)).execute();
    for (let start = 0; start < acls.length; start += 500) await t.db.insertInto('acls').values(acls.slice(start, start + 500)).execute();
    while ((await keepPageBuckets(t.db, t.dialect, PAGED_LISTS)) > 0);
    await sql`analyze`.execute(t.db);
  });
  after(() => t.close());

  /** The plan of every statement a page of the list runs, one line per step. */
  async function planOfPage(filter: Omit<OkmListFilter, 'now'>, page: number): Promise<string[]> {
    const statements: CompiledQuery[] = [];
    const logged = new Kysely<Database>({ dialect: t.dialect.createDialect(), log: (event) => void statements.push(event.query) });
    try {
      await listOkms(logged, { now: Date.now(), ...filter }, 'serial_number', page, 100);
    } finally {
      await logged.destroy();
    }
    const steps: string[] = [];
    for (const statement of statements) {
      const plan = await t.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]));
      steps.push(...plan.rows.map((row) => row.detail));
    }
    return steps;
  }

  test('when most ACLs are unlinked, each OKM of a page finds its ACL through acls_okm_idx, not a scan of the ACLs', async () => {
    const plan = await planOfPage({ customerId }, 10);

    assert.ok(plan.includes('SEARCH acls USING INDEX acls_okm_idx (okm_serial=?) LEFT-JOIN'), plan.join('\n'));
    assert.ok(!plan.some((step) => step.startsWith('SCAN acls')), plan.join('\n'));
  });

  /** Whether the plan counts from the kept fleet-summary counts (and their pending deltas) rather than from okms. */
  const countsKept = (plan: string[]) => ['fleet_summary_counts', 'fleet_summary_deltas'].every((table) => plan.some((step) => step.includes(table)));

  test('a deep page of drifting OKMs walks the covering index of the drifting ones from its page bucket, and its total is read from the buckets', async () => {
    const plan = await planOfPage({ state: 'drifting' }, 25);

    assert.ok(plan.includes('SEARCH okms USING COVERING INDEX okms_drifting_idx (serial_number>?)'), plan.join('\n'));
    assert.ok(plan.some((step) => step.includes('SEARCH page_buckets')), plan.join('\n'));
    assert.ok(!countsKept(plan), plan.join('\n'));
    assert.ok(!plan.some((step) => step.startsWith('SCAN okms USING INDEX')), plan.join('\n'));
  });

  test('a deep page of in-step OKMs, most of the fleet, walks from its page bucket, and its total is read from the buckets, not counted over okms', async () => {
    const fleet = await planOfPage({ state: 'in_step' }, 30);
    const customer = await planOfPage({ customerId, state: 'in_step' }, 30);

    assert.ok(fleet.includes('SEARCH okms USING INDEX sqlite_autoindex_okms_1 (serial_number>?)'), fleet.join('\n'));
    assert.ok(customer.includes('SEARCH okms USING INDEX okms_customer_idx (customer_id=? AND serial_number>?)'), customer.join('\n'));
    for (const plan of [fleet, customer]) {
      assert.ok(plan.some((step) => step.includes('SEARCH page_buckets')), plan.join('\n'));
      assert.ok(!countsKept(plan), plan.join('\n'));
      // One walk of okms for the page's serial numbers, and one read of the page's rows: no third pass to count.
      assert.equal(plan.filter((step) => / okms\b/.test(step)).length, 2, plan.join('\n'));
    }
  });

  test('a page of overdue OKMs, and their count, read the overdue ones through their indexes, not every OKM', async () => {
    const fleet = await planOfPage({ state: 'overdue' }, 5);
    const customer = await planOfPage({ customerId, overdue: true }, 5);

    for (const plan of [fleet, customer]) {
      assert.ok(plan.some((step) => step.includes('okms_marked_overdue_idx')), plan.join('\n'));
      assert.ok(plan.some((step) => step.includes('okms_due_by_idx')), plan.join('\n'));
      assert.ok(!plan.some((step) => step === 'SCAN okms' || step === 'SCAN marked' || step === 'SCAN past_due'), plan.join('\n'));
    }
  });

  test('a page of one firmware version, the whole fleet\'s or a customer\'s, walks a range of a firmware index from its page bucket, and its total is read from the buckets', async () => {
    const fleet = await planOfPage({ firmwareVersion: '2.2.0' }, 5);
    const customer = await planOfPage({ customerId, firmwareVersion: '2.2.0' }, 5);

    assert.equal(fleet.filter((step) => step.includes('USING COVERING INDEX okms_firmware_idx (firmware_version=?')).length, 1, fleet.join('\n'));
    assert.equal(customer.filter((step) => step.includes('USING COVERING INDEX okms_customer_firmware_idx (customer_id=? AND firmware_version=?')).length, 1, customer.join('\n'));
    for (const plan of [fleet, customer]) {
      assert.ok(plan.some((step) => step.includes('SEARCH page_buckets')), plan.join('\n'));
      assert.ok(!countsKept(plan), plan.join('\n'));
    }
  });
});
