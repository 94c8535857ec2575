import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { createCustomer, findCustomerByName } from '../../src/customers/repository.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import type { DialectStrategy } from '../../src/db/dialects/strategy.ts';
import { BUCKET_ENTRIES, foldPageBucketDeltas, keepPageBuckets, KEYS_CUT_PER_STEP, MAX_BUCKET_ENTRIES, pagePosition, type BucketedList } from '../../src/db/page-buckets.ts';
import {
  AUDIT_RECORD_LIST,
  BUCKETED_STATES,
  customerScope,
  firmwareScope,
  OKM_FIRMWARE_LIST,
  OKM_LIST,
  OKM_STATE_LIST,
  PAGED_LISTS,
  stateScope,
  type BucketedState,
} from '../../src/db/paged-lists.ts';
import { appendAuditRecords } from '../../src/okm/audit-repository.ts';
import { fleetStateCondition } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';


let customers = 0;

/** Runs keeper steps until no delta is pending and no bucket of any list is oversized. */
async function keepUntilCut(db: Db, dialect: DialectStrategy): Promise<void> {
  while ((await keepPageBuckets(db, dialect, PAGED_LISTS)) > 0);
}

async function foldAll(db: Db, dialect: DialectStrategy): Promise<void> {
  while ((await foldPageBucketDeltas(db, dialect)) > 0);
}

async function oversizedBuckets(db: Db) {
  return db.selectFrom('page_buckets').select(['list', 'scope', 'lower_key', 'entries']).where('entries', '>', MAX_BUCKET_ENTRIES).execute();
}

async function pendingDeltas(db: Db) {
  return Number((await db.selectFrom('page_bucket_deltas').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
}

forEachDatabase('pages found through page_buckets', (kind) => {
  let t: TestApp;
  before(async () => {
    // The keeper steps only when a test says so here; its schedule is tested below.
    t = await buildTestApp(kind, { PAGE_BUCKET_KEEPER_INTERVAL_MS: '0' });
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

  /**
   * A page (from 1) of a list's scope as its buckets place it, and the scope's total: the walk
   * starts at the bucket that holds the page (pagePosition) and skips the keys before the page
   * in it. The keys are `column` of `table` where `condition` holds, the list's own keys.
   */
  async function bucketPage(list: BucketedList, scope: string, table: 'okms' | 'okm_audit_records', column: 'serial_number' | 'id', condition: RawBuilder<SqlBool>, number: number, perPage: number) {
    const position = await pagePosition(t.db, list, scope, (number - 1) * perPage);
    const from = position.from === null ? sql`` : sql`and ${sql.ref(column)} >= ${column === 'id' ? Number(position.from) : String(position.from)}`;
    const rows = await sql<{ key: string | number }>`select ${sql.ref(column)} as key from ${sql.table(table)} where ${condition} ${from}
      order by ${sql.ref(column)} limit ${perPage} offset ${position.skip}`.execute(t.db);
    return { keys: rows.rows.map((row) => row.key), total: position.total };
  }

  /** The condition on an OKM of one customer's (by id), of none (null), or of the fleet's (undefined). */
  const ownedBy = (customerId: number | null | undefined) =>
    customerId === undefined ? sql<SqlBool>`1 = 1` : customerId === null ? sql<SqlBool>`customer_id is null` : sql<SqlBool>`customer_id = ${customerId}`;

  const page = async (customer: string, number: number, perPage: number) => {
    const customerId = (await findCustomerByName(t.db, customer))!.id;
    const found = await bucketPage(OKM_LIST, customerScope(customerId), 'okms', 'serial_number', ownedBy(customerId), number, perPage);
    return { serials: found.keys.map(String), total: found.total };
  };

  /** The name of the customer of that id among `customers`; null (no customer) and undefined (the fleet) as they are. */
  const nameAmong = (customers: { id: number; name: string }[], owner: number | null | undefined) =>
    owner === undefined || owner === null ? owner : customers.find((customer) => customer.id === owner)!.name;

  /** A page of the OKMs of one firmware version or state (`firmware_version=…`, `state=…`), of one customer's OKMs (by name), of those of none (null), or of the fleet's (undefined). */
  const filteredPage = async (filter: string, customerName: string | null | undefined, number: number, perPage: number) => {
    const customerId = customerName === undefined || customerName === null ? customerName : (await findCustomerByName(t.db, customerName))!.id;
    const [name, value] = filter.split('=') as [string, string];
    const found =
      name === 'firmware_version'
        ? await bucketPage(OKM_FIRMWARE_LIST, firmwareScope(value, customerId), 'okms', 'serial_number', sql<SqlBool>`firmware_version = ${value} and ${ownedBy(customerId)}`, number, perPage)
        : await bucketPage(OKM_STATE_LIST, stateScope(value as BucketedState, customerId), 'okms', 'serial_number', sql<SqlBool>`${fleetStateCondition(value as BucketedState, { now: Date.now() })} and ${ownedBy(customerId)}`, number, perPage);
    return { serials: found.keys.map(String), total: found.total };
  };

  /** The page that `pick` chooses among those of `ordered` is its offset slice, and the total its length. */
  async function assertPickedPageIsSlice(ordered: string[], pick: number, perPage: number, read: (number: number) => ReturnType<typeof filteredPage>, label: string) {
    const number = 1 + (pick % Math.max(1, Math.ceil(ordered.length / perPage)));

    const found = await read(number);

    assert.deepEqual(found.serials, ordered.slice((number - 1) * perPage, number * perPage), `${label}, page ${number} of ${perPage}`);
    assert.equal(found.total, ordered.length);
  }

  /** Every bucket of the list's scope counts exactly the keys (`serials`, in order) from its lowest key up to the next bucket's. */
  async function assertListBucketsExact(list: string, scope: string, serials: string[]) {
    await foldAll(t.db, t.dialect);
    const buckets = await t.db.selectFrom('page_buckets').select(['lower_key', 'entries']).where('list', '=', list).where('scope', '=', scope).orderBy('lower_key').execute();
    buckets.forEach((bucket, index) => {
      const next = buckets[index + 1]?.lower_key;
      const inBucket = serials.filter((serial) => serial >= bucket.lower_key && (next === undefined || serial < next)).length;
      assert.equal(Number(bucket.entries), inBucket, `${list} ${scope}: bucket ${bucket.lower_key}`);
    });
    assert.equal(
      buckets.reduce((sum, bucket) => sum + Number(bucket.entries), 0),
      serials.length,
      `${list} ${scope}: the buckets count every key of the scope`,
    );
    return buckets;
  }

  /** assertListBucketsExact for a customer's scope of the OKM list. */
  async function assertBucketsExact(scope: string) {
    const customerId = Number(scope.slice(1));
    const serials = (await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customerId).orderBy('serial_number').execute()).map((row) => row.serial_number);
    return assertListBucketsExact('okms', scope, serials);
  }

  test('a scope loaded past the maximum is read by walking its one bucket, without writing, and once the keeper has stepped it is cut into exact buckets of at most the maximum, every page the offset slice', async () => {
    const customer = await newCustomer();
    const serials = Array.from({ length: KEYS_CUT_PER_STEP + 3 * BUCKET_ENTRIES + 321 }, (_, index) => `BK${customer.id}-${String(index * 7919 % 100_003).padStart(6, '0')}`);
    await insertOkms(serials, customer.id);
    const ordered = [...new Set(serials)].sort();
    const lastPage = Math.ceil(ordered.length / 100);
    const pages = [[1, 30], [34, 30], [35, 30], [42, 100], [ordered.length, 1], [ordered.length - 1, 1], [1000, 7], [lastPage, 100]] as const;
    const assertPagesAreSlices = async () => {
      for (const [number, perPage] of pages) {
        const found = await page(customer.name, number, perPage);
        assert.deepEqual(found.serials, ordered.slice((number - 1) * perPage, number * perPage), `page ${number} of ${perPage}`);
        assert.equal(found.total, ordered.length);
      }
    };

    await assertPagesAreSlices();
    const uncut = await assertBucketsExact(customerScope(customer.id));
    assert.equal(uncut.length, 1);

    await keepUntilCut(t.db, t.dialect);

    const buckets = await assertBucketsExact(customerScope(customer.id));
    assert.ok(buckets.length >= ordered.length / BUCKET_ENTRIES, `${buckets.length} buckets`);
    assert.deepEqual(await oversizedBuckets(t.db), []);
    await assertPagesAreSlices();
  });

  test('after inserts, deletes and moves between customers in cut buckets, the counts stay exact and every page is the offset slice', async () => {
    const customer = await newCustomer();
    const other = await newCustomer();
    const initial = Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `MV${customer.id}-${String(index * 2).padStart(5, '0')}`);
    await insertOkms(initial, customer.id);
    await keepUntilCut(t.db, t.dialect);
    const held = new Set(initial);
    const moved = new Set<string>();

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('insert' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('delete' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('move' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('burst' as const), at: fc.nat(6 * BUCKET_ENTRIES) }),
            fc.record({ kind: fc.constant('keep' as const), at: fc.constant(0) }),
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
            } else if (change.kind === 'burst') {
              // Keys between two existing ones, enough to grow a bucket past the maximum over a few runs.
              const burst = Array.from({ length: 300 }, (_, index) => `${serial}-${String(index).padStart(3, '0')}`).filter((key) => !held.has(key) && !moved.has(key));
              await insertOkms(burst, customer.id);
              for (const key of burst) held.add(key);
            } else if (change.kind === 'keep') {
              await keepPageBuckets(t.db, t.dialect, PAGED_LISTS);
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
    await keepUntilCut(t.db, t.dialect);
    await assertBucketsExact(customerScope(customer.id));
    await assertBucketsExact(customerScope(other.id));
    assert.deepEqual(await oversizedBuckets(t.db), []);
  });

  test('two keepers folding and cutting the same buckets while writers insert and delete in them and pages are read leave every count exact and every page the offset slice', async () => {
    const customer = await newCustomer();
    await insertOkms(
      Array.from({ length: 2 * MAX_BUCKET_ENTRIES + 500 }, (_, index) => `CC${customer.id}-${String(index * 4).padStart(6, '0')}`),
      customer.id,
    );
    // On PostgreSQL a second keeper of its own connections, as another process's would be.
    const other = kind === 'postgres' ? openDatabase(dialectFor(t.settings)).db : t.db;
    let writing = true;
    // Half the writers store one key a statement, half a statement of keys spread over several buckets; each deletes some of its keys again.
    const writers = Array.from({ length: 8 }, (_, writer) =>
      (async () => {
        for (let index = 0; index < 40; index++) {
          const spread = writer % 2 === 0 ? [0] : [0, 1_100, 2_300, 4_700, 9_100];
          const serials = spread.map((distance, n) => `CC${customer.id}-${String((index * 450 + distance) % 20_000).padStart(6, '0')}-w${writer}-${n}`);
          await insertOkms(serials, customer.id);
          if (index % 3 === 0) await t.db.deleteFrom('okms').where('serial_number', 'in', serials.slice(0, 2)).execute();
        }
      })(),
    );
    const keepers = [t.db, other].map(async (db) => {
      while (writing) {
        await keepPageBuckets(db, t.dialect, PAGED_LISTS);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    });
    const readers = Array.from({ length: 4 }, async (_, reader) => {
      while (writing) {
        const found = await page(customer.name, 1 + reader * 40, 30);
        assert.equal(found.serials.length, 30);
        // Between the OKMs there were before and all the writers store: none counted twice.
        assert.ok(found.total >= 2 * MAX_BUCKET_ENTRIES + 500 && found.total <= 2 * MAX_BUCKET_ENTRIES + 500 + 4 * 40 * 6, `total ${found.total}`);
      }
    });

    try {
      await Promise.all(writers);
    } finally {
      writing = false;
      await Promise.all([...keepers, ...readers]);
      if (other !== t.db) await other.destroy();
    }
    await keepUntilCut(t.db, t.dialect);

    const buckets = await assertBucketsExact(customerScope(customer.id));
    const serials = (await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customer.id).orderBy('serial_number').execute()).map((row) => row.serial_number);
    assert.equal(
      buckets.reduce((sum, bucket) => sum + Number(bucket.entries), 0),
      serials.length,
    );
    assert.ok(buckets.length >= 5, `${buckets.length} buckets`);
    assert.deepEqual(await oversizedBuckets(t.db), []);
    for (const number of [1, 17, 33, 34, 35, 66, 67, 101, Math.ceil(serials.length / 30)]) {
      const found = await page(customer.name, number, 30);
      assert.deepEqual(found.serials, serials.slice((number - 1) * 30, number * 30), `page ${number}`);
      assert.equal(found.total, serials.length);
    }
  });

  test('a statement that inserts or deletes keys of several scopes and cut buckets at once counts each in its bucket', async () => {
    const [first, second] = [await newCustomer(), await newCustomer()];
    const keysOf = (customer: { id: number }, step: number) => Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `ST${customer.id}-${String(index * step).padStart(6, '0')}`);
    await insertOkms(keysOf(first, 4), first.id);
    await insertOkms(keysOf(second, 4), second.id);
    await keepUntilCut(t.db, t.dialect);
    const rows = [first, second].flatMap((customer) =>
      keysOf(customer, 7).map((serial) => ({ serial_number: `${serial}x`, customer_id: customer.id, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 })),
    );

    await t.db.insertInto('okms').values(rows.slice(0, 1500)).execute();
    await t.db.insertInto('okms').values(rows.slice(1500, 3000)).execute();
    await t.db.insertInto('okms').values(rows.slice(3000)).execute();
    await assertBucketsExact(customerScope(first.id));
    await assertBucketsExact(customerScope(second.id));
    await t.db.deleteFrom('okms').where('serial_number', 'like', `ST${first.id}-%0x`).execute();
    await t.db.deleteFrom('okms').where('customer_id', 'in', [first.id, second.id]).where('serial_number', 'like', '%3').execute();

    for (const customer of [first, second]) {
      await assertBucketsExact(customerScope(customer.id));
      const serials = (await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customer.id).orderBy('serial_number').execute()).map((row) => row.serial_number);
      for (const [number, perPage] of [[1, 100], [37, 100], [Math.ceil(serials.length / 30), 30]] as const) {
        assert.deepEqual((await page(customer.name, number, perPage)).serials, serials.slice((number - 1) * perPage, number * perPage));
      }
    }
  });

  test("an OKM's audit records: after appends and deletes, with keeper steps between, every page is the offset slice and the total exact", async () => {
    const serial = `AUD-${++customers}`;
    await insertOkms([serial], null);
    await appendAuditRecords(t.db, serial, Array.from({ length: KEYS_CUT_PER_STEP + 2 * BUCKET_ENTRIES + 17 }, (_, n) => ({ n })), 1);
    const audit = async (number: number, perPage: number) => {
      const found = await bucketPage(AUDIT_RECORD_LIST, serial, 'okm_audit_records', 'id', sql<SqlBool>`okm_serial = ${serial}`, number, perPage);
      return { ids: found.keys.map(Number), total: found.total };
    };
    const storedIds = async () => (await t.db.selectFrom('okm_audit_records').select('id').where('okm_serial', '=', serial).orderBy('id').execute()).map((row) => row.id);

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 2 * BUCKET_ENTRIES }) }),
            fc.record({ kind: fc.constant('delete' as const), count: fc.integer({ min: 1, max: 400 }) }),
            fc.record({ kind: fc.constant('keep' as const), count: fc.constant(0) }),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        fc.integer({ min: 1, max: 100 }),
        fc.nat(),
        async (changes, perPage, pick) => {
          for (const change of changes) {
            if (change.kind === 'append') await appendAuditRecords(t.db, serial, Array.from({ length: change.count }, (_, n) => ({ n })), 2);
            else if (change.kind === 'keep') await keepPageBuckets(t.db, t.dialect, PAGED_LISTS);
            else {
              // Every seventh stored record from a random one on: deletes in several buckets at once.
              const ids = await storedIds();
              const start = pick % Math.max(1, ids.length);
              await t.db.deleteFrom('okm_audit_records').where('id', 'in', ids.slice(start).filter((_, index) => index % 7 === 0).slice(0, change.count)).execute();
            }
          }
          const ids = await storedIds();
          const number = 1 + (pick % Math.max(1, Math.ceil(ids.length / perPage)));

          const found = await audit(number, perPage);

          assert.deepEqual(found.ids, ids.slice((number - 1) * perPage, number * perPage));
          assert.equal(found.total, ids.length);
        },
      ),
      { numRuns: 25 },
    );
    await keepUntilCut(t.db, t.dialect);
    const ids = await storedIds();
    const deepest = Math.ceil(ids.length / 30);
    assert.deepEqual((await audit(deepest, 30)).ids, ids.slice((deepest - 1) * 30));
    assert.deepEqual(await oversizedBuckets(t.db), []);
    const buckets = await t.db.selectFrom('page_buckets').select(['lower_key', 'entries']).where('list', '=', 'okm_audit_records').where('scope', '=', serial).orderBy('lower_key').execute();
    buckets.forEach((bucket, index) => {
      const next = buckets[index + 1]?.lower_key;
      const inBucket = ids.filter((id) => (bucket.lower_key === '' || id >= Number(bucket.lower_key)) && (next === undefined || id < Number(next))).length;
      assert.equal(Number(bucket.entries), inBucket, `bucket ${bucket.lower_key}`);
    });
    assert.ok(buckets.length >= ids.length / BUCKET_ENTRIES, `${buckets.length} buckets`);
  });

  const postgresOnly = { skip: kind !== 'postgres' && 'SQLite writes one transaction at a time' };

  test('on PostgreSQL, two transactions storing keys in the same buckets do not wait for each other', postgresOnly, async () => {
    const customer = await newCustomer();
    await insertOkms(Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `NW${customer.id}-${String(index * 10).padStart(5, '0')}`), customer.id);
    await keepUntilCut(t.db, t.dialect);
    const other = openDatabase(dialectFor(t.settings)).db;
    const okms = (suffix: string) => Array.from({ length: 64 }, (_, index) => ({ serial_number: `NW${customer.id}-${String(index * 470).padStart(5, '0')}${suffix}`, customer_id: customer.id, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }));
    try {
      await t.db.transaction().execute(async (first) => {
        await first.insertInto('okms').values(okms('a')).execute();

        // The first transaction is open: a wait for its locks would end in lock_not_available.
        await other.transaction().execute(async (second) => {
          await sql`set local lock_timeout = '2s'`.execute(second);
          await second.insertInto('okms').values(okms('b')).execute();
          await second.deleteFrom('okms').where('serial_number', '=', `NW${customer.id}-00010`).execute();
        });
      });
    } finally {
      await other.destroy();
    }

    assert.equal((await page(customer.name, 1, 10)).total, 3 * BUCKET_ENTRIES + 2 * 64 - 1);
    await assertBucketsExact(customerScope(customer.id));
  });

  test('on PostgreSQL, pages and totals count the deltas not folded yet', postgresOnly, async () => {
    const customer = await newCustomer();
    const serials = Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `PD${customer.id}-${String(index * 3).padStart(5, '0')}`);
    await insertOkms(serials.filter((_, index) => index % 2 === 0), customer.id);
    await keepUntilCut(t.db, t.dialect);
    await insertOkms(serials.filter((_, index) => index % 2 === 1), customer.id);
    await t.db.deleteFrom('okms').where('serial_number', 'in', serials.slice(0, 100)).execute();
    const held = serials.slice(100);
    assert.ok((await pendingDeltas(t.db)) >= serials.length / 2, 'deltas pending');

    for (const number of [1, 10, 20, 29]) {
      const found = await page(customer.name, number, 100);
      assert.deepEqual(found.serials, held.slice((number - 1) * 100, number * 100), `page ${number}`);
      assert.equal(found.total, held.length);
    }
  });

  test('on PostgreSQL, a writer does not wait for a keeper step that has updated the first bucket of its scope', postgresOnly, async () => {
    const [customer, elsewhere] = [await newCustomer(), await newCustomer()];
    await insertOkms([`FB${customer.id}-1`], customer.id);
    await insertOkms([`FB${customer.id}-3`], elsewhere.id);
    await keepUntilCut(t.db, t.dialect);
    const other = openDatabase(dialectFor(t.settings)).db;
    try {
      // What a fold or a cut does to the scope's first bucket, in a transaction still open.
      await t.db.transaction().execute(async (keeper) => {
        await keeper.updateTable('page_buckets').set((eb) => ({ entries: eb.ref('entries') })).where('list', '=', 'okms').where('scope', '=', customerScope(customer.id)).where('lower_key', '=', '').execute();

        await other.transaction().execute(async (writer) => {
          await sql`set local lock_timeout = '2s'`.execute(writer);
          await writer.insertInto('okms').values({ serial_number: `FB${customer.id}-2`, customer_id: customer.id, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }).execute();
          await writer.updateTable('okms').set({ customer_id: customer.id }).where('serial_number', '=', `FB${customer.id}-3`).execute();
        });
      });
    } finally {
      await other.destroy();
    }

    await assertBucketsExact(customerScope(customer.id));
  });

  test('with the lowest key of a cut bucket deleted and not folded yet, the pages in and after that bucket are the offset slices', async () => {
    const customer = await newCustomer();
    await insertOkms(Array.from({ length: 3 * BUCKET_ENTRIES }, (_, index) => `LK${customer.id}-${String(index).padStart(5, '0')}`), customer.id);
    await keepUntilCut(t.db, t.dialect);
    const second = await t.db.selectFrom('page_buckets').select('lower_key').where('list', '=', 'okms').where('scope', '=', customerScope(customer.id)).where('lower_key', '>', '').orderBy('lower_key').executeTakeFirstOrThrow();

    await t.db.deleteFrom('okms').where('serial_number', '=', second.lower_key).execute();

    const serials = (await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customer.id).orderBy('serial_number').execute()).map((row) => row.serial_number);
    for (const number of [100, 101, 102]) assert.deepEqual((await page(customer.name, number, 10)).serials, serials.slice((number - 1) * 10, number * 10), `page ${number}`);
    await assertBucketsExact(customerScope(customer.id));
  });

  test('with more deltas pending than one fold takes, in a scope one bucket holds, the keeper folds them all before it cuts and every bucket is exact', async () => {
    const customer = await newCustomer();

    await insertOkms(Array.from({ length: 12_000 }, (_, index) => `MF${customer.id}-${String((index * 7919) % 100_003).padStart(6, '0')}`), customer.id);
    await keepUntilCut(t.db, t.dialect);

    const buckets = await assertBucketsExact(customerScope(customer.id));
    assert.ok(buckets.length >= 12, `${buckets.length} buckets`);
    assert.deepEqual(await oversizedBuckets(t.db), []);
  });

  test('an OKM moved to a customer that holds none yet is counted in that customer\'s scope', async () => {
    const [from, to] = [await newCustomer(), await newCustomer()];
    await insertOkms([`MV${from.id}-1`, `MV${from.id}-2`], from.id);

    await t.db.updateTable('okms').set({ customer_id: to.id }).where('serial_number', '=', `MV${from.id}-1`).execute();

    assert.equal((await page(to.name, 1, 10)).total, 1);
    assert.equal((await page(from.name, 1, 10)).total, 1);
    await assertBucketsExact(customerScope(to.id));
    await assertBucketsExact(customerScope(from.id));
  });

  test('OKMs of one firmware version: after inserts, deletes, version changes and moves between customers, with keeper steps between, every page of the fleet\'s, a customer\'s and the unassigned ones is the offset slice and the total exact', async () => {
    const [first, second] = [await newCustomer(), await newCustomer()];
    const owners = [first.id, second.id, null] as const;
    // Versions no other test stores, so that the fleet-wide scope holds this test's OKMs alone.
    const versions = [`9.${first.id}.1`, `9.${first.id}.2`, null] as const;
    const held = new Map<string, { customerId: number | null; version: string | null }>();
    const serialOf = (at: number) => `FW${first.id}-${String(at).padStart(5, '0')}`;
    const initial = Array.from({ length: 6 * BUCKET_ENTRIES }, (_, index) => ({ serial: serialOf(index * 3), customerId: owners[index % 3]!, version: versions[index % 2]! }));
    for (let start = 0; start < initial.length; start += 500) {
      const rows = initial.slice(start, start + 500);
      await t.db
        .insertInto('okms')
        .values(rows.map((row) => ({ serial_number: row.serial, customer_id: row.customerId, firmware_version: row.version, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 })))
        .execute();
      for (const row of rows) held.set(row.serial, { customerId: row.customerId, version: row.version });
    }
    await keepUntilCut(t.db, t.dialect);
    const fleetBuckets = await t.db.selectFrom('page_buckets').select('lower_key').where('list', '=', 'okm_firmware').where('scope', '=', `f:${versions[0]}`).execute();
    assert.ok(fleetBuckets.length >= 3, `${fleetBuckets.length} buckets of the fleet's OKMs of one version`);

    const firmwarePage = (version: string, owner: number | null | undefined, number: number, perPage: number) => filteredPage(`firmware_version=${version}`, nameAmong([first, second], owner), number, perPage);
    const ofFirstVersion = initial.filter((okm) => okm.version === versions[0]).map((okm) => okm.serial).sort();
    for (const number of [1, 10, 11, 20, 21, 30]) {
      assert.deepEqual((await firmwarePage(versions[0], undefined, number, 100)).serials, ofFirstVersion.slice((number - 1) * 100, number * 100), `page ${number}`);
    }

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            kind: fc.constantFrom('insert', 'delete', 'report', 'move', 'keep'),
            at: fc.nat(18 * BUCKET_ENTRIES),
            version: fc.constantFrom(...versions),
            owner: fc.constantFrom(...owners),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.constantFrom(...versions.filter((version) => version !== null)),
        fc.constantFrom(undefined, ...owners),
        fc.integer({ min: 1, max: 100 }),
        fc.nat(),
        async (changes, version, owner, perPage, pick) => {
          for (const change of changes) {
            const serial = serialOf(change.at);
            const okm = held.get(serial);
            if (change.kind === 'insert' && okm === undefined) {
              await t.db
                .insertInto('okms')
                .values({ serial_number: serial, customer_id: change.owner, firmware_version: change.version, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 })
                .execute();
              held.set(serial, { customerId: change.owner, version: change.version });
            } else if (change.kind === 'delete' && okm !== undefined) {
              await t.db.deleteFrom('okms').where('serial_number', '=', serial).execute();
              held.delete(serial);
            } else if (change.kind === 'report' && okm !== undefined) {
              await t.db.updateTable('okms').set({ firmware_version: change.version }).where('serial_number', '=', serial).execute();
              okm.version = change.version;
            } else if (change.kind === 'move' && okm !== undefined) {
              await t.db.updateTable('okms').set({ customer_id: change.owner }).where('serial_number', '=', serial).execute();
              okm.customerId = change.owner;
            } else if (change.kind === 'keep') {
              await keepPageBuckets(t.db, t.dialect, PAGED_LISTS);
            }
          }
          const ordered = [...held]
            .filter(([, okm]) => okm.version === version && (owner === undefined || okm.customerId === owner))
            .map(([serial]) => serial)
            .sort();
          await assertPickedPageIsSlice(ordered, pick, perPage, (number) => firmwarePage(version, owner, number, perPage), `${version} of ${owner}`);
        },
      ),
      { numRuns: 25 },
    );
    await keepUntilCut(t.db, t.dialect);
    assert.deepEqual(await oversizedBuckets(t.db), []);
    const counted = await t.db.selectFrom('page_buckets').select(['scope', (eb) => eb.fn.sum<number | string>('entries').as('entries')]).where('list', '=', 'okm_firmware').where('scope', 'like', `%:9.${first.id}.%`).groupBy('scope').execute();
    const expected = new Map<string, number>();
    for (const okm of held.values()) {
      if (okm.version === null) continue;
      for (const scope of [`f:${okm.version}`, `f${okm.customerId ?? 'u'}:${okm.version}`]) expected.set(scope, (expected.get(scope) ?? 0) + 1);
    }
    assert.deepEqual(new Map(counted.filter((row) => Number(row.entries) !== 0).map((row) => [row.scope, Number(row.entries)])), expected, 'the buckets count every OKM that reported a version, and none that did not');
  });

  test('OKMs in step, drifting and never polled: after inserts, deletes, polls, changes of verdict and moves between customers, with keeper steps between, every page of the fleet\'s, a customer\'s and the unassigned ones is the offset slice and the total exact', async () => {
    const [first, second] = [await newCustomer(), await newCustomer()];
    const owners = [first.id, second.id, null] as const;
    const verdicts = [null, 'kasDateTime', 'pollingInterval'] as const;
    const serialOf = (at: number) => `ST${first.id}-${String(at).padStart(5, '0')}`;
    const insert = (rows: { serial: string; customerId: number | null; polled: boolean; verdict: string | null }[]) =>
      t.db
        .insertInto('okms')
        .values(
          rows.map((row) => ({
            serial_number: row.serial,
            customer_id: row.customerId,
            last_sync_time: row.polled ? 1 : null,
            last_correction: row.verdict,
            auditing_enabled: 0,
            status_urls: '[]',
            created_at: 0,
            updated_at: 0,
          })),
        )
        .execute();
    const initial = Array.from({ length: 12 * BUCKET_ENTRIES }, (_, index) => ({ serial: serialOf(index * 3), customerId: owners[index % 3]!, polled: index % 7 !== 0, verdict: index % 4 === 0 ? verdicts[1] : null }));
    for (let start = 0; start < initial.length; start += 500) await insert(initial.slice(start, start + 500));
    await keepUntilCut(t.db, t.dialect);
    const customerBuckets = await t.db.selectFrom('page_buckets').select('lower_key').where('list', '=', 'okm_state').where('scope', '=', `s${first.id}:in_step`).execute();
    assert.ok(customerBuckets.length >= 2, `${customerBuckets.length} buckets of one customer's OKMs in step`);

    /** What the list must hold, read from the table with the state's own condition (the fleet's scope holds other tests' OKMs too). */
    const expectedSerials = async (state: BucketedState, owner: number | null | undefined) => {
      let query = t.db.selectFrom('okms').select('serial_number').where(fleetStateCondition(state, { now: 0 })).orderBy('serial_number');
      if (owner !== undefined) query = query.where('customer_id', owner === null ? 'is' : '=', owner);
      return (await query.execute()).map((row) => row.serial_number);
    };

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            kind: fc.constantFrom('insert', 'delete', 'poll', 'verdict', 'forget', 'move', 'keep'),
            at: fc.nat(36 * BUCKET_ENTRIES),
            verdict: fc.constantFrom(...verdicts),
            owner: fc.constantFrom(...owners),
            polled: fc.boolean(),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.constantFrom(...BUCKETED_STATES),
        fc.constantFrom(undefined, ...owners),
        fc.integer({ min: 1, max: 100 }),
        fc.nat(),
        async (changes, state, owner, perPage, pick) => {
          for (const change of changes) {
            const serial = serialOf(change.at);
            const okm = t.db.updateTable('okms').where('serial_number', '=', serial);
            if (change.kind === 'insert') {
              await t.db.deleteFrom('okms').where('serial_number', '=', serial).execute();
              await insert([{ serial, customerId: change.owner, polled: change.polled, verdict: change.verdict }]);
            } else if (change.kind === 'delete') await t.db.deleteFrom('okms').where('serial_number', '=', serial).execute();
            else if (change.kind === 'poll') await okm.set({ last_sync_time: change.at }).execute();
            // As a poll writes them: its time, then its correction only when it differs from the last.
            else if (change.kind === 'verdict') await okm.set({ last_correction: change.verdict }).execute();
            else if (change.kind === 'forget') await okm.set({ last_sync_time: null }).execute();
            else if (change.kind === 'move') await okm.set({ customer_id: change.owner }).execute();
            else await keepPageBuckets(t.db, t.dialect, PAGED_LISTS);
          }
          const ordered = await expectedSerials(state, owner);
          await assertPickedPageIsSlice(ordered, pick, perPage, (number) => filteredPage(`state=${state}`, nameAmong([first, second], owner), number, perPage), `${state} of ${owner}`);
        },
      ),
      { numRuns: 25 },
    );
    await keepUntilCut(t.db, t.dialect);
    assert.deepEqual(await oversizedBuckets(t.db), []);
    for (const owner of [undefined, ...owners]) {
      for (const state of BUCKETED_STATES) await assertListBucketsExact('okm_state', stateScope(state, owner), await expectedSerials(state, owner));
    }
  });

  test('on PostgreSQL, a poll that leaves an OKM in its state appends no delta of the state list, and one that changes its verdict moves it', { skip: kind !== 'postgres' && 'SQLite updates its buckets in place, with no deltas to see' }, async () => {
    const customer = await newCustomer();
    const serial = `STP${customer.id}`;
    await t.db.insertInto('okms').values({ serial_number: serial, customer_id: customer.id, last_sync_time: 1, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }).execute();
    await foldAll(t.db, t.dialect);
    const stateDeltas = async () =>
      (await t.db.selectFrom('page_bucket_deltas').select(['scope', 'entries']).where('list', '=', 'okm_state').where('key', '=', serial).orderBy('scope').orderBy('entries').execute()).map(
        (delta) => `${delta.scope} ${delta.entries}`,
      );

    await t.db.updateTable('okms').set({ last_sync_time: 2, last_ip: '192.0.2.1' }).where('serial_number', '=', serial).execute();
    const afterPoll = await stateDeltas();
    await t.db.updateTable('okms').set({ last_sync_time: 3, last_correction: 'kasDateTime' }).where('serial_number', '=', serial).execute();

    assert.deepEqual(afterPoll, []);
    assert.deepEqual(await stateDeltas(), [`s${customer.id}:drifting 1`, `s${customer.id}:in_step -1`, 's:drifting 1', 's:in_step -1']);
  });

  test('creating an OKM takes its serial number off the pending OKMs', async () => {
    await t.db.insertInto('pending_okms').values({ serial_number: 'PEND-TAKEN', first_seen_at: 1, last_seen_at: 1, last_ip: '127.0.0.1', firmware_version: null, call_count: 1 }).execute();

    await insertOkms(['PEND-TAKEN'], null);

    const pending = await t.db.selectFrom('pending_okms').select('serial_number').where('serial_number', '=', 'PEND-TAKEN').execute();
    assert.deepEqual(pending, []);
  });
});

forEachDatabase('the page bucket keeper of a server process', (kind) => {
  test('when a scope grows past the maximum, the keeper cuts it with no page read, and stops when the server closes', async () => {
    const t = await buildTestApp(kind, { PAGE_BUCKET_KEEPER_INTERVAL_MS: '50' });
    try {
      const customer = await createCustomer(t.db, 'kept');
      const rows = Array.from({ length: 2 * MAX_BUCKET_ENTRIES + 1 }, (_, index) => ({ serial_number: `KP-${String(index).padStart(5, '0')}`, customer_id: customer.id, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }));
      for (let start = 0; start < rows.length; start += 500) await t.db.insertInto('okms').values(rows.slice(start, start + 500)).execute();

      const deadline = Date.now() + 20_000;
      const kept = async () => (await oversizedBuckets(t.db)).length === 0 && (await pendingDeltas(t.db)) === 0;
      while (!(await kept()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));

      assert.deepEqual(await oversizedBuckets(t.db), []);
      assert.equal(await pendingDeltas(t.db), 0);
      const buckets = await t.db.selectFrom('page_buckets').select('entries').where('list', '=', 'okms').where('scope', '=', customerScope(customer.id)).execute();
      assert.ok(buckets.length >= 4, `${buckets.length} buckets`);
    } finally {
      await t.close();
    }
  });
});
