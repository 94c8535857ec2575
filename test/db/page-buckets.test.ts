import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { createCustomer } from '../../src/customers/repository.ts';
import { BUCKET_ENTRIES, MAX_BUCKET_ENTRIES } from '../../src/db/page-buckets.ts';
import { customerScope } from '../../src/db/paged-lists.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';

const OKMS = '/api/v1/okms';

let customers = 0;

forEachDatabase('pages found through page_buckets', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  async function newCustomer() {
    const name = `buckets-${++customers}`;
    return createCustomer(t.db, name);
  }

  async function insertOkms(serials: string[], customerId: number | null) {
    for (let start = 0; start < serials.length; start += 500) {
      const rows = serials.slice(start, start + 500).map((serial) => ({ serial_number: serial, customer_id: customerId, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }));
      await t.db.insertInto('okms').values(rows).execute();
    }
  }

  const page = async (customer: string, number: number, perPage: number) => {
    const response = await t.app.inject({ method: 'GET', url: `${OKMS}?customer=${customer}&page=${number}&results_per_page=${perPage}`, headers: { authorization: `Bearer ${admin}` } });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { pagination: { total_results: string }; data: { serial_number: string }[] };
    return { serials: body.data.map((okm) => okm.serial_number), total: Number(body.pagination.total_results) };
  };

  /** Every bucket of the scope counts exactly the keys from its lowest key up to the next bucket's. */
  async function assertBucketsExact(scope: string) {
    const buckets = await t.db.selectFrom('page_buckets').select(['lower_key', 'entries']).where('list', '=', 'okms').where('scope', '=', scope).orderBy('lower_key').execute();
    const customerId = Number(scope.slice(1));
    const serials = (await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customerId).orderBy('serial_number').execute()).map((row) => row.serial_number);
    buckets.forEach((bucket, index) => {
      const next = buckets[index + 1]?.lower_key;
      const inBucket = serials.filter((serial) => serial >= bucket.lower_key && (next === undefined || serial < next)).length;
      assert.equal(Number(bucket.entries), inBucket, `bucket ${bucket.lower_key}`);
    });
    return buckets;
  }

  test('a scope of thousands of OKMs is cut into buckets of at most the maximum, each counting exactly its keys, and every page is the offset slice', async () => {
    const customer = await newCustomer();
    const serials = Array.from({ length: 4 * BUCKET_ENTRIES + 321 }, (_, index) => `BK${customer.id}-${String(index * 7919 % 100_003).padStart(6, '0')}`);
    await insertOkms(serials, customer.id);
    const ordered = [...new Set(serials)].sort();

    const last = await page(customer.name, Math.ceil(ordered.length / 100), 100);
    const buckets = await assertBucketsExact(customerScope(customer.id));

    assert.ok(buckets.length >= 4, `${buckets.length} buckets`);
    assert.ok(buckets.every((bucket) => Number(bucket.entries) <= MAX_BUCKET_ENTRIES));
    assert.deepEqual(last.serials, ordered.slice((Math.ceil(ordered.length / 100) - 1) * 100));
    for (const [number, perPage] of [[1, 30], [34, 30], [35, 30], [42, 100], [4322, 1], [4321, 1], [1000, 7]] as const) {
      const found = await page(customer.name, number, perPage);
      assert.deepEqual(found.serials, ordered.slice((number - 1) * perPage, number * perPage), `page ${number} of ${perPage}`);
      assert.equal(found.total, ordered.length);
    }
  });

  test('after inserts, deletes and moves between customers in cut buckets, the counts stay exact and every page is the offset slice', async () => {
    const customer = await newCustomer();
    const other = await newCustomer();
    const initial = Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `MV${customer.id}-${String(index * 2).padStart(5, '0')}`);
    await insertOkms(initial, customer.id);
    await page(customer.name, 1, 1);
    const held = new Set(initial);
    const moved = new Set<string>();

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('insert' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('delete' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('move' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
          ),
          { minLength: 1, maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 100 }),
        fc.nat(),
        async (changes, perPage, pick) => {
          for (const change of changes) {
            const serial = `MV${customer.id}-${String(change.at).padStart(5, '0')}`;
            if (change.kind === 'insert' && !held.has(serial) && !moved.has(serial)) {
              await insertOkms([serial], customer.id);
              held.add(serial);
            } else if (change.kind === 'delete' && held.has(serial)) {
              await t.db.deleteFrom('okms').where('serial_number', '=', serial).execute();
              held.delete(serial);
            } else if (change.kind === 'move' && held.has(serial)) {
              await t.db.updateTable('okms').set({ customer_id: other.id }).where('serial_number', '=', serial).execute();
              held.delete(serial);
              moved.add(serial);
            }
          }
          const ordered = [...held].sort();
          const number = 1 + (pick % Math.ceil(ordered.length / perPage));

          const found = await page(customer.name, number, perPage);

          assert.deepEqual(found.serials, ordered.slice((number - 1) * perPage, number * perPage));
          assert.equal(found.total, ordered.length);
          await assertBucketsExact(customerScope(customer.id));
        },
      ),
      { numRuns: 30 },
    );
    await assertBucketsExact(customerScope(other.id));
  });

  test('writers inserting into a bucket while a page read cuts it leave every count exact', async () => {
    const customer = await newCustomer();
    await insertOkms(
      Array.from({ length: MAX_BUCKET_ENTRIES + 500 }, (_, index) => `CC${customer.id}-${String(index * 4).padStart(6, '0')}`),
      customer.id,
    );
    const writers = Array.from({ length: 8 }, (_, writer) =>
      (async () => {
        for (let index = 0; index < 40; index++) {
          await insertOkms([`CC${customer.id}-${String(index * 200).padStart(6, '0')}-w${writer}`], customer.id);
        }
      })(),
    );
    const readers = Array.from({ length: 4 }, (_, reader) => page(customer.name, 1 + reader * 20, 30));

    await Promise.all([...writers, ...readers]);
    await page(customer.name, 1, 1);

    const buckets = await assertBucketsExact(customerScope(customer.id));
    const total = await sql<{ n: number | string }>`select count(*) as n from okms where customer_id = ${customer.id}`.execute(t.db);
    assert.equal(
      buckets.reduce((sum, bucket) => sum + Number(bucket.entries), 0),
      Number(total.rows[0]!.n),
    );
  });

  test('creating an OKM takes its serial number off the pending OKMs', async () => {
    await t.db.insertInto('pending_okms').values({ serial_number: 'PEND-TAKEN', first_seen_at: 1, last_seen_at: 1, last_ip: '127.0.0.1', firmware_version: null, call_count: 1 }).execute();

    await insertOkms(['PEND-TAKEN'], null);

    const pending = await t.db.selectFrom('pending_okms').select('serial_number').where('serial_number', '=', 'PEND-TAKEN').execute();
    assert.deepEqual(pending, []);
  });
});
