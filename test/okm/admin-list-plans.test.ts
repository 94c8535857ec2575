import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { createCustomer } from '../../src/customers/service.ts';
import type { Database } from '../../src/db/schema.ts';
import { listOkms, type OkmListFilter } from '../../src/okm/admin-repository.ts';
import { NEVER_POLLED } from '../../src/okm/fleet-states.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';

type Filter = Omit<OkmListFilter, 'now'>;
type Position = 'first' | 'middle' | 'last';

const PAGE = 100;

// SQLite's plans, as its EXPLAIN QUERY PLAN reports them once the database is analyzed (its
// ANALYZE statistics are what once misled it; PostgreSQL's record the share of NULLs).
describe('OKM list pages on SQLite are index range seeks, at the first, a middle and the last page of every filter', () => {
  let t: TestApp;
  let customerId: number;
  before(async () => {
    t = await buildTestApp('sqlite');
    customerId = (await createCustomer(t.db, 'plans')).id;
    const now = Date.now();
    const okms = Array.from({ length: 6000 }, (_, index) => ({
      serial_number: `PL-${String(index).padStart(5, '0')}`,
      // One in four without a customer.
      customer_id: index % 4 === 3 ? null : customerId,
      auditing_enabled: 0,
      status_urls: '[]',
      // One in ten never polled; of the others, a few the fleet pass marked overdue.
      overdue_at: index % 10 === 0 ? NEVER_POLLED : index % 17 === 0 || index % 23 === 0 ? now : null,
      last_correction: index % 2 === 0 ? 'kasDateTime' : null,
      // One in ten stuck, all of them drifting and polled.
      stuck_resolver: index % 10 === 4 ? 'kasDateTime' : null,
      stuck_since: index % 10 === 4 ? now : null,
      firmware_version: ['2.1.0', '2.2.0', '2.3.0'][index % 3]!,
      created_at: 0,
      updated_at: 0,
    }));
    // Most ACLs are linked to no OKM: their okm_serial is NULL.
    const acls = Array.from({ length: 3000 }, (_, index) => ({ id: `plan-acl-${index}`, customer_id: customerId, okm_serial: null, created_at: 0, updated_at: 0 }));
    for (let start = 0; start < okms.length; start += 500) await t.db.insertInto('okms').values(okms.slice(start, start + 500)).execute();
    for (let start = 0; start < acls.length; start += 500) await t.db.insertInto('acls').values(acls.slice(start, start + 500)).execute();
    await sql`analyze`.execute(t.db);
  });
  after(() => t.close());

  /** The serial numbers the filter matches, in list order, walked through the list itself. */
  async function matches(filter: Filter): Promise<string[]> {
    const serials: string[] = [];
    for (let after: [string] | undefined; ; ) {
      const page = await listOkms(t.db, filter, { after, limit: 500 });
      serials.push(...page.items.map((owned) => owned.okm.serialNumber));
      if (page.nextCursor === null) return serials;
      after = [serials.at(-1)!];
    }
  }

  /** The plan of every statement a page of the list runs, one line per step, each with its place in the plan's tree. */
  async function planOfPage(filter: Filter, position: Position): Promise<{ detail: string; nested: boolean }[]> {
    const all = position === 'first' ? [] : await matches(filter);
    assert.ok(position === 'first' || all.length > 3 * PAGE, `enough matches for a middle page: ${all.length}`);
    const after = position === 'first' ? undefined : ([all[position === 'middle' ? Math.floor(all.length / 2) : all.length - PAGE / 2]!] as [string]);
    const statements: CompiledQuery[] = [];
    const logged = new Kysely<Database>({ dialect: t.dialect.createDialect(), log: (event) => void statements.push(event.query) });
    let page;
    try {
      page = await listOkms(logged, filter, { after, limit: PAGE });
    } finally {
      await logged.destroy();
    }
    assert.equal(page.items.length, position === 'last' ? PAGE / 2 - 1 : PAGE);
    const steps: { detail: string; nested: boolean }[] = [];
    for (const statement of statements) {
      const plan = await t.db.executeQuery<{ detail: string; parent: number }>(CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]));
      steps.push(...plan.rows.map((row) => ({ detail: row.detail, nested: row.parent !== 0 })));
    }
    return steps;
  }

  const shown = (plan: { detail: string }[]) => plan.map((step) => step.detail).join('\n');

  /** Filters whose page is a range of one index that ends with the serial number, and that index. */
  const RANGES: [string, () => Filter, string][] = [
    ['the whole fleet', () => ({}), 'sqlite_autoindex_okms_1'],
    ["a customer's", () => ({ customerId }), 'okms_customer_idx'],
    ['unassigned', () => ({ unassigned: true }), 'okms_customer_idx'],
    ['state=drifting', () => ({ state: 'drifting' }), 'okms_drifting_idx'],
    ["a customer's, state=drifting", () => ({ customerId, state: 'drifting' }), 'okms_customer_drifting_idx'],
    ['firmware_version', () => ({ firmwareVersion: '2.2.0' }), 'okms_firmware_idx'],
    ["a customer's, firmware_version", () => ({ customerId, firmwareVersion: '2.2.0' }), 'okms_customer_firmware_idx'],
    ['state=in_step', () => ({ state: 'in_step' }), 'sqlite_autoindex_okms_1'],
    ["a customer's, state=in_step", () => ({ customerId, state: 'in_step' }), 'okms_customer_idx'],
    ['serial_prefix', () => ({ serialPrefix: 'PL-0' }), 'sqlite_autoindex_okms_1'],
    ['overdue=false', () => ({ overdue: false }), 'sqlite_autoindex_okms_1'],
    ['state=never_polled', () => ({ state: 'never_polled' }), 'okms_never_polled_idx'],
    ["a customer's, state=never_polled", () => ({ customerId, state: 'never_polled' }), 'okms_customer_never_polled_idx'],
    ['state=overdue', () => ({ state: 'overdue' }), 'okms_marked_overdue_idx'],
    ["a customer's, overdue=true", () => ({ customerId, overdue: true }), 'okms_customer_marked_overdue_idx'],
    ['state=stuck', () => ({ state: 'stuck' }), 'okms_stuck_idx'],
    ["a customer's, state=stuck", () => ({ customerId, state: 'stuck' }), 'okms_customer_stuck_idx'],
  ];

  for (const [name, filter, index] of RANGES) {
    for (const position of ['first', 'middle', 'last'] as const) {
      test(`${name}, ${position} page: the page's serial numbers are a range of ${index} from the cursor on, in its order (no sort); only they are read`, async () => {
        const plan = await planOfPage(filter(), position);
        const walk = plan.filter((step) => step.nested && / okms /.test(`${step.detail} `));
        const rows = plan.filter((step) => !step.nested && / okms /.test(`${step.detail} `));

        assert.equal(walk.length, 1, shown(plan));
        // The first page of a list without an equality filter walks its index from the start: a SCAN in index order, stopped at the page.
        const seek = position === 'first' ? new RegExp(`^(SEARCH|SCAN) okms USING (COVERING )?INDEX ${index}\\b`) : new RegExp(`^SEARCH okms USING (COVERING )?INDEX ${index} \\(.*serial_number>\\?`);
        assert.match(walk[0]!.detail, seek, shown(plan));
        assert.deepEqual(
          rows.map((step) => step.detail),
          ['SEARCH okms USING INDEX sqlite_autoindex_okms_1 (serial_number=?)'],
          shown(plan),
        );
        assert.ok(!plan.some((step) => step.detail.includes('TEMP B-TREE')), shown(plan));
      });
    }
  }

  test('when most ACLs are unlinked, each OKM of a page finds its ACL through acls_okm_idx, not a scan of the ACLs', async () => {
    const plan = await planOfPage({ customerId }, 'middle');

    assert.ok(plan.some((step) => step.detail === 'SEARCH acls USING INDEX acls_okm_idx (okm_serial=?) LEFT-JOIN'), shown(plan));
    assert.ok(!plan.some((step) => step.detail.startsWith('SCAN acls')), shown(plan));
  });
});
