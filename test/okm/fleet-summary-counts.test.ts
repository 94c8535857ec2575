import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { DELTAS_PER_FOLD, foldFleetSummaryDeltas } from '../../src/okm/fleet-summary-counts.ts';
import { sweepOverdueOkms } from '../../src/okm/overdue-repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, OKMS, uniqueSerial } from './admin-helpers.ts';
import { poll } from './config-helpers.ts';
import { freshGroups, keptGroups } from './fleet-summary-helpers.ts';

const DAY = 86_400_000;
const CUSTOMERS = ['sum-a', 'sum-b'];

/** The summary's OKM figures worked out from the okms rows by the definitions of docs/okm-admin-api.md. */
async function expectedFigures(db: Db, now: number) {
  const okms = await db.selectFrom('okms').select(['last_sync_time', 'last_correction', 'due_by', 'overdue_at']).execute();
  const polled = okms.filter((okm) => okm.last_sync_time !== null);
  return {
    total: okms.length,
    in_step: polled.filter((okm) => okm.last_correction === null).length,
    drifting: okms.filter((okm) => okm.last_correction !== null).length,
    overdue: okms.filter((okm) => (okm.overdue_at === null ? okm.due_by !== null && Number(okm.due_by) < now : Number(okm.overdue_at) > 0)).length,
    never_polled: okms.length - polled.length,
  };
}

type Write =
  | { kind: 'create'; customer: number | null }
  | { kind: 'poll'; okm: number; kasFirmware: string; wirelessKeyFirmware: string | undefined; clockOff: boolean }
  | { kind: 'pending poll and accept'; customer: number | null; kasFirmware: string }
  | { kind: 'move'; okm: number; customer: number | null }
  | { kind: 'delete'; okm: number }
  | { kind: 'bulk insert'; count: number; customer: number | null; polled: boolean }
  | { kind: 'fall silent'; okm: number }
  | { kind: 'overdue sweep' }
  | { kind: 'fold'; limit: number };

const customerIndex = fc.option(fc.integer({ min: 0, max: CUSTOMERS.length - 1 }), { nil: null });
const okmIndex = fc.nat({ max: 1000 });
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), customer: customerIndex }),
  fc.record({
    kind: fc.constant('poll' as const),
    okm: okmIndex,
    kasFirmware: fc.constantFrom('2.0.0', '2.1.0'),
    wirelessKeyFirmware: fc.option(fc.constant('3.0'), { nil: undefined }),
    clockOff: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('pending poll and accept' as const), customer: customerIndex, kasFirmware: fc.constantFrom('2.0.0', '2.1.0') }),
  fc.record({ kind: fc.constant('move' as const), okm: okmIndex, customer: customerIndex }),
  fc.record({ kind: fc.constant('delete' as const), okm: okmIndex }),
  fc.record({ kind: fc.constant('bulk insert' as const), count: fc.integer({ min: 1, max: 5 }), customer: customerIndex, polled: fc.boolean() }),
  fc.record({ kind: fc.constant('fall silent' as const), okm: okmIndex }),
  fc.constant({ kind: 'overdue sweep' as const }),
  fc.record({ kind: fc.constant('fold' as const), limit: fc.integer({ min: 1, max: 6 }) }),
);

forEachDatabase('fleet summary counts kept on write', (kind) => {
  let t: TestApp;
  let admin: string;
  const customerIds: number[] = [];
  before(async () => {
    // Polls from unknown serial numbers wait for an operator; folds run when a test says.
    t = await buildTestApp(kind, { OKM_AUTO_ENROL: 'false', FLEET_SUMMARY_FOLD_INTERVAL_MS: '0' });
    admin = await issueTestToken(t, { scopes: ['admin'] });
    for (const name of CUSTOMERS) {
      await issueTestToken(t, { customer: name, scopes: ['okm:read'] });
      customerIds.push(Number((await t.db.selectFrom('customers').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id));
    }
  });
  after(() => t.close());

  const inStep = (extra: Record<string, string | number | undefined>) => ({
    kasDateTime: Date.now(),
    cacheMode: 1,
    auditUrl: t.settings.auditUrl,
    pollingInterval: t.settings.fleetPollingInterval,
    ...extra,
  });
  const expectOk = (response: { statusCode: number; body: string }, ...codes: number[]) => assert.ok(codes.includes(response.statusCode), response.body);

  async function apply(step: Write, serials: string[]): Promise<void> {
    const serialAt = (index: number) => serials[index % serials.length];
    const customerName = (customer: number | null) => (customer === null ? null : CUSTOMERS[customer]!);
    switch (step.kind) {
      case 'create': {
        const serial = uniqueSerial('SUM');
        const query = step.customer === null ? '' : `?customer=${customerName(step.customer)}`;
        expectOk(await call(t, 'PUT', `${OKMS}/${serial}${query}`, { token: admin, payload: {} }), 201);
        serials.push(serial);
        return;
      }
      case 'poll': {
        const serial = serialAt(step.okm);
        if (serial === undefined) return;
        const clock = step.clockOff ? { kasDateTime: Date.now() - DAY } : {};
        expectOk(await poll(t, serial, inStep({ kasFirmware: step.kasFirmware, batchKeyFirmware: '1.2', wirelessKeyFirmware: step.wirelessKeyFirmware, ...clock })), 200);
        return;
      }
      case 'pending poll and accept': {
        const serial = uniqueSerial('SUMP');
        await poll(t, serial, inStep({ kasFirmware: step.kasFirmware }));
        const customer = customerName(step.customer);
        expectOk(await call(t, 'POST', `/api/v1/pending-okms/${serial}/accept`, { token: admin, payload: customer === null ? {} : { customer } }), 201);
        serials.push(serial);
        return;
      }
      case 'move': {
        const serial = serialAt(step.okm);
        if (serial === undefined) return;
        expectOk(await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: admin, payload: { customer: customerName(step.customer) } }), 200);
        return;
      }
      case 'delete': {
        const serial = serialAt(step.okm);
        if (serial === undefined) return;
        expectOk(await call(t, 'DELETE', `${OKMS}/${serial}`, { token: admin }), 200, 204);
        serials.splice(serials.indexOf(serial), 1);
        return;
      }
      case 'bulk insert': {
        const now = Date.now();
        const rows = Array.from({ length: step.count }, () => ({
          serial_number: uniqueSerial('SUMB'),
          customer_id: step.customer === null ? null : customerIds[step.customer]!,
          auditing_enabled: 0,
          status_urls: '[]',
          last_sync_time: step.polled ? now : null,
          firmware_version: step.polled ? '1.9.0' : null,
          last_correction: step.polled ? 'kasFirmware' : null,
          due_by: step.polled ? now + DAY : null,
          overdue_at: step.polled ? null : 0,
          created_at: now,
          updated_at: now,
        }));
        await t.db.insertInto('okms').values(rows).execute();
        serials.push(...rows.map((row) => row.serial_number));
        return;
      }
      case 'fall silent': {
        const serial = serialAt(step.okm);
        if (serial === undefined) return;
        await t.db.updateTable('okms').set({ due_by: Date.now() - 1000 }).where('serial_number', '=', serial).where('due_by', 'is not', null).execute();
        return;
      }
      case 'overdue sweep':
        await sweepOverdueOkms(t.db, t.dialect);
        return;
      case 'fold':
        await foldFleetSummaryDeltas(t.db, t.dialect, step.limit);
        return;
    }
  }

  test('after any sequence of writes, by any path, the kept groups equal a fresh count of the OKMs, and so does the summary', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 25 }), async (writes) => {
        await t.db.deleteFrom('okms').execute();
        const serials: string[] = [];
        for (const step of writes) await apply(step, serials);

        assert.deepEqual(await keptGroups(t.db), await freshGroups(t.db));
        const response = await call(t, 'GET', '/api/v1/fleet/summary', { token: admin });
        assert.deepEqual(response.json().data.okms, await expectedFigures(t.db, Date.now()));
      }),
      { numRuns: 30 },
    );
  });

  test('folding while others write, by several folders at once, loses and doubles nothing, and leaves no delta behind', async () => {
    await t.db.deleteFrom('okms').execute();
    while ((await foldFleetSummaryDeltas(t.db, t.dialect)) > 0);
    const insertBatch = async (batch: number) => {
      const now = Date.now();
      await t.db
        .insertInto('okms')
        .values(
          Array.from({ length: 50 }, (_, index) => ({
            serial_number: `FOLD-${batch}-${index}`,
            customer_id: customerIds[index % 2]!,
            auditing_enabled: 0,
            status_urls: '[]',
            last_sync_time: index % 3 === 0 ? null : now,
            firmware_version: `2.${index % 4}.0`,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
    };
    const folder = async () => {
      let taken = 0;
      for (let step = 0; step < 40; step++) taken += await foldFleetSummaryDeltas(t.db, t.dialect, 7);
      return taken;
    };

    const [, ...taken] = await Promise.all([Promise.all(Array.from({ length: 10 }, (_, batch) => insertBatch(batch))), folder(), folder(), folder()]);
    while ((await foldFleetSummaryDeltas(t.db, t.dialect)) > 0);

    assert.ok(taken.reduce((sum, count) => sum + count, 0) > 0, 'the folders ran while the inserts did');
    assert.equal(Number((await t.db.selectFrom('fleet_summary_deltas').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 0);
    assert.deepEqual(await keptGroups(t.db), await freshGroups(t.db));
    const counted = await t.db.selectFrom('fleet_summary_counts').select((eb) => eb.fn.sum<number | string>('okms').as('okms')).executeTakeFirstOrThrow();
    assert.equal(Number(counted.okms), 500);
  });

  if (kind === 'postgres') {
    test('a fold that finds another holding the fold skips at once rather than waiting for it', async () => {
      await t.db.insertInto('okms').values({ serial_number: uniqueSerial('SKIP'), customer_id: null, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }).execute();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let held!: () => void;
      const holding = new Promise<void>((resolve) => (held = resolve));
      const holder = t.db.transaction().execute(async (trx) => {
        await sql`SELECT id FROM fleet_summary_folder FOR UPDATE`.execute(trx);
        held();
        await released;
      });
      await holding;
      try {
        const started = Date.now();
        const taken = await foldFleetSummaryDeltas(t.db, t.dialect);

        assert.equal(taken, 0);
        assert.ok(Date.now() - started < 1000);
      } finally {
        release();
        await holder;
      }
      assert.ok((await foldFleetSummaryDeltas(t.db, t.dialect)) > 0, 'once the other fold is over, the deltas are folded');
    });
  }
});

forEachDatabase('the fleet summary folder of a server process', (kind) => {
  test('the folder folds what the triggers appended, with no summary read, more than one step of it', async () => {
    const t = await buildTestApp(kind, { FLEET_SUMMARY_FOLD_INTERVAL_MS: '50' });
    try {
      const rows = Array.from({ length: DELTAS_PER_FOLD + 500 }, (_, index) => ({ serial_number: `FOLDER-${index}`, customer_id: null, auditing_enabled: 0, status_urls: '[]', created_at: 0, updated_at: 0 }));
      for (let start = 0; start < rows.length; start += 500) await t.db.insertInto('okms').values(rows.slice(start, start + 500)).execute();
      const pendingDeltas = async () => Number((await t.db.selectFrom('fleet_summary_deltas').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

      await eventually(async () => (await pendingDeltas()) === 0, 20_000, 'every delta folded');

      assert.deepEqual(await keptGroups(t.db), await freshGroups(t.db));
    } finally {
      await t.close();
    }
  });
});
