import assert from 'node:assert/strict';
import { after, before, mock, test } from 'node:test';
import fc from 'fast-check';
import SQLite from 'better-sqlite3';
import path from 'node:path';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { createCustomer } from '../../src/customers/service.ts';
import { createFleetPass, FLEET_PASS, FLEET_PASS_LEASE_MS, FLEET_PASS_STEP, releaseLease } from '../../src/fleet/fleet-pass.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, createOkm, OKMS, uniqueSerial } from '../okm/admin-helpers.ts';
import { poll, SERVER_TIME } from '../device/config-helpers.ts';
import { comparableSummary, countSummary, dueBefore, fleetRows, pendingCount, type FleetRow } from './fleet-summary-helpers.ts';

const SUMMARY = '/api/v1/fleet/summary';
/** The fleet's polling interval in these tests, unlike any OKM's own, so that which one counted shows. */
const FLEET_INTERVAL_S = 20;
const DAY = 86_400_000;
const iso = (time: number) => new Date(time).toISOString();

/**
 * The fleet pass: overdue marks and their events, the summary's snapshot, the walk in steps and
 * the lease. Date is mocked (only Date) so that each poll happens when the test says; every
 * test starts in an era of its own, later than every time before it, since a pass walks the
 * whole fleet, the OKMs of earlier tests too, and marks are only ever checked against the
 * latest pass.
 */
forEachDatabase('fleet pass', (kind) => {
  let t: TestApp;
  let era = SERVER_TIME;
  /** The start of a new era, 30 days after the previous one: the clock is set there. */
  const newEra = () => {
    era += 30 * DAY;
    mock.timers.setTime(era);
    return era;
  };
  /** An operator token valid at the mocked time (tokens last an hour). */
  const adminToken = () => issueTestToken(t, { scopes: ['admin'] });

  before(async () => {
    mock.timers.enable({ apis: ['Date'], now: era });
    // Deliveries stay queued, to be read as the events emitted.
    t = await buildTestApp(kind, { FLEET_POLLING_INTERVAL: String(FLEET_INTERVAL_S), WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    const created = await call(t, 'POST', '/api/v1/webhook-endpoints', {
      token: await adminToken(),
      payload: { url: 'https://hooks.example/fleet', event_types: ['okm.overdue', 'okm.back_online', 'okm.enrolled'] },
    });
    assert.equal(created.statusCode, 201, created.body);
  });
  after(async () => {
    mock.timers.reset();
    await t.close();
  });

  /** The data of every event of that type emitted about the OKM, oldest first. */
  async function eventsOf(type: string, serial: string): Promise<Record<string, unknown>[]> {
    const rows = await t.db.selectFrom('fleet_event_deliveries').select('payload').where('event_type', '=', type).orderBy('id').execute();
    return rows.map((row) => JSON.parse(row.payload).data as Record<string, unknown>).filter((data) => data.serial_number === serial);
  }

  const overdueAt = async (serial: string) => (await t.db.selectFrom('okms').select('overdue_at').where('serial_number', '=', serial).executeTakeFirstOrThrow()).overdue_at;
  const runPass = (now: number) => t.app.fleetPass.runPass({ now: () => now });

  /** A config poll at `at` (mocked time), in step unless `parameters` say otherwise. */
  async function pollAt(serial: string, at: number, parameters: Record<string, string | number | undefined> = {}) {
    mock.timers.setTime(at);
    const response = await poll(t, serial, { kasDateTime: at, cacheMode: 1, auditUrl: t.settings.auditUrl, ...parameters });
    assert.ok(response.statusCode === 200 || response.statusCode === 204, `${serial}: ${response.statusCode} ${response.body}`);
    return response;
  }

  test('an OKM silent past 3 of its effective polling intervals (its own, else the fleet\'s) is marked once, with one okm.overdue; one within them, or never polled, is not', async () => {
    const start = newEra();
    const admin = await adminToken();
    const [fleetDefault, ownShort, ownLong, enrolled, never] = ['DEF', 'OWN10', 'OWN40', 'ENR', 'NEV'].map((prefix) => uniqueSerial(`PASS-${prefix}`));
    await createOkm(t, admin, fleetDefault!);
    await createOkm(t, admin, ownShort!, { polling_interval: 10 });
    await createOkm(t, admin, ownLong!, { polling_interval: 40 });
    await createOkm(t, admin, never!);
    for (const serial of [fleetDefault!, ownShort!, ownLong!]) await pollAt(serial, start, { pollingInterval: serial === ownShort ? 10 : serial === ownLong ? 40 : FLEET_INTERVAL_S });
    // Enrolled by its first poll, with no customer: polled all the same.
    await pollAt(enrolled!, start);

    // Due: own 10 s at +30 s, the fleet's 20 s at +60 s, own 40 s at +120 s; the due time itself is not past it.
    assert.equal(await runPass(start + 30_000), true);
    assert.deepEqual(await Promise.all([ownShort!, fleetDefault!, enrolled!, ownLong!, never!].map(overdueAt)), [null, null, null, null, 0]);

    assert.equal(await runPass(start + 61_000), true);
    assert.deepEqual(await Promise.all([ownShort!, fleetDefault!, enrolled!, ownLong!, never!].map(overdueAt)), [start + 61_000, start + 61_000, start + 61_000, null, 0]);

    assert.equal(await runPass(start + 120_000), true);
    assert.equal(await overdueAt(ownLong!), null);
    assert.equal(await runPass(start + 120_001), true);
    assert.equal(await runPass(start + 200_000), true);

    assert.deepEqual(await Promise.all([ownShort!, fleetDefault!, enrolled!, ownLong!, never!].map(overdueAt)), [start + 61_000, start + 61_000, start + 61_000, start + 120_001, 0]);
    const expected = { [ownShort!]: start + 30_000, [fleetDefault!]: start + 60_000, [enrolled!]: start + 60_000, [ownLong!]: start + 120_000 };
    for (const [serial, due] of Object.entries(expected)) {
      assert.deepEqual(await eventsOf('okm.overdue', serial), [{ serial_number: serial, last_sync_time: iso(start), overdue_since: iso(due), last_ip: '127.0.0.1' }], serial);
    }
    assert.deepEqual(await eventsOf('okm.overdue', never!), []);
    mock.timers.setTime(start + 200_000);
    const records = await Promise.all([ownShort!, ownLong!, never!].map(async (serial) => (await call(t, 'GET', `${OKMS}/${serial}`, { token: await adminToken() })).json().data.overdue));
    assert.deepEqual(records, [true, true, false]);
  });

  test('a poll of a marked OKM clears the mark and emits okm.back_online; the next pass leaves it unmarked until it is silent again', async () => {
    const start = newEra();
    const serial = uniqueSerial('PASS-BACK');
    await createOkm(t, await adminToken(), serial);
    await pollAt(serial, start);
    await runPass(start + 61_000);
    assert.equal(await overdueAt(serial), start + 61_000);

    await pollAt(serial, start + 100_000);
    await runPass(start + 101_000);

    assert.equal(await overdueAt(serial), null);
    assert.deepEqual(await eventsOf('okm.back_online', serial), [
      { serial_number: serial, last_sync_time: iso(start + 100_000), last_ip: '127.0.0.1', firmware_version: null, overdue_since: iso(start + 61_000) },
    ]);
    await runPass(start + 161_000);
    assert.equal(await overdueAt(serial), start + 161_000);
    assert.deepEqual(
      (await eventsOf('okm.overdue', serial)).map((event) => event.overdue_since),
      [iso(start + 60_000), iso(start + 160_000)],
    );
  });

  test('a poll that commits between the read of a step and its UPDATE is not marked: the UPDATE checks the silence again', async () => {
    const start = newEra();
    const serial = uniqueSerial('PASS-RACE');
    await createOkm(t, await adminToken(), serial);
    await pollAt(serial, start);
    const polledAgainAt = start + 50_000;

    // Right after the step has read its OKMs (this one silent since `start`), the OKM polls again:
    // through the app on PostgreSQL (another connection of the pool); on SQLite as another
    // process would (a connection of its own to the file), which cannot come between: the
    // step's transaction began IMMEDIATE and holds the write lock, so that process waits for the
    // step's commit (here, on this one thread, it cannot wait, and is refused at once).
    let racedSteps = 0;
    let otherWriterRefused: string | undefined;
    const pollAfterRead: KyselyPlugin = {
      transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => args.node,
      async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
        const read = args.result.rows;
        if (racedSteps === 0 && read.some((row) => row.serial_number === serial && 'polling_interval' in row)) {
          racedSteps++;
          if (kind === 'postgres') await pollAt(serial, polledAgainAt);
          else {
            const other = new SQLite(path.join(t.settings.dataDir, 'keyfleet.sqlite'));
            try {
              other.pragma('busy_timeout = 0');
              other.prepare('UPDATE okm_polls SET last_sync_time = ? WHERE serial_number = ?').run(polledAgainAt, serial);
            } catch (error) {
              otherWriterRefused = (error as { code?: string }).code;
            } finally {
              other.close();
            }
          }
        }
        return args.result;
      },
    };
    const pass = createFleetPass(t.db.withPlugin(pollAfterRead), t.settings);

    const passed = await pass.runPass({ now: () => start + 61_000 }).catch((error: unknown) => error);

    assert.equal(racedSteps, 1);
    assert.equal(passed, true);
    if (kind === 'sqlite') {
      // The poll could not commit between the step's read and its UPDATE: it comes after the pass.
      assert.equal(otherWriterRefused, 'SQLITE_BUSY');
    } else {
      assert.equal(await overdueAt(serial), null);
      assert.deepEqual(await eventsOf('okm.overdue', serial), []);
    }
    await releaseLease(t.db, pass.holder);
  });

  test('the summary is the snapshot of the last complete pass: polls after it change nothing until the next', async () => {
    const start = newEra();
    const admin = await adminToken();
    const customer = `pass-snap-${start}`;
    const serial = uniqueSerial('PASS-SNAP');
    await createCustomer(t.db, customer);
    await createOkm(t, admin, serial, {}, `?customer=${customer}`);
    await runPass(start + 1);
    const summaryOf = async () => (await call(t, 'GET', `${SUMMARY}?customer=${customer}`, { token: admin })).json().data.okms;
    assert.deepEqual(await summaryOf(), { total: 1, in_step: 0, drifting: 0, overdue: 0, never_polled: 1, stuck: 0 });

    await pollAt(serial, start + 2, { pollingInterval: FLEET_INTERVAL_S });
    mock.timers.setTime(start + 3);
    assert.deepEqual(await summaryOf(), { total: 1, in_step: 0, drifting: 0, overdue: 0, never_polled: 1, stuck: 0 });

    await runPass(start + 4);
    assert.deepEqual(await summaryOf(), { total: 1, in_step: 1, drifting: 0, overdue: 0, never_polled: 0, stuck: 0 });
  });

  test('after any mix of OKMs and polls, the summary (operator\'s, one customer\'s, a customer token\'s) and the marks equal those counted from the tables', async () => {
    const okmArbitrary = fc.record({
      origin: fc.constantFrom('customer', 'other customer', 'unassigned', 'enrolled by its poll'),
      interval: fc.constantFrom(null, 5, 10, 60, 3600),
      polls: fc.array(
        fc.record({
          atSeconds: fc.integer({ min: 0, max: 7200 }),
          kas: fc.constantFrom(undefined, '1.0.0', '2.0.0', '2.10.0'),
          batchKey: fc.constantFrom(undefined, '1.1', '1.2'),
          wirelessKey: fc.constantFrom(undefined, '3.0'),
          answer: fc.constantFrom('in step', 'kasDateTime', 'pollingInterval'),
        }),
        { maxLength: 3 },
      ),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(okmArbitrary, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 4 * 3600 }), async (fleet, passAtSeconds) => {
        const start = newEra();
        const admin = await adminToken();
        const names = [`pass-prop-${start}-a`, `pass-prop-${start}-b`];
        for (const name of names) await createCustomer(t.db, name);
        const serials = fleet.map(() => uniqueSerial(`PROP${++run}`));
        for (const [index, okm] of fleet.entries()) {
          if (okm.origin === 'enrolled by its poll') continue;
          const query = okm.origin === 'customer' ? `?customer=${names[0]}` : okm.origin === 'other customer' ? `?customer=${names[1]}` : '';
          await createOkm(t, admin, serials[index]!, okm.interval === null ? {} : { polling_interval: okm.interval }, query);
        }
        const polls = fleet.flatMap((okm, index) => okm.polls.map((one) => ({ ...one, index, interval: okm.origin === 'enrolled by its poll' ? null : okm.interval })));
        for (const one of polls.sort((a, b) => a.atSeconds - b.atSeconds)) {
          const at = start + one.atSeconds * 1000;
          const interval = one.interval ?? FLEET_INTERVAL_S;
          await pollAt(serials[one.index]!, at, {
            kasFirmware: one.kas,
            batchKeyFirmware: one.batchKey,
            wirelessKeyFirmware: one.wirelessKey,
            kasDateTime: one.answer === 'kasDateTime' ? at - 3_600_000 : at,
            pollingInterval: one.answer === 'pollingInterval' ? interval + 1 : interval,
          });
        }
        const passNow = start + passAtSeconds * 1000;

        assert.equal(await runPass(passNow), true);

        const overdue = dueBefore(passNow, FLEET_INTERVAL_S);
        const rows = await fleetRows(t.db);
        const marked = (row: FleetRow) => row.overdue_at !== null && row.overdue_at > 0;
        assert.deepEqual(rows.filter(marked).map((row) => row.serial_number).sort(), rows.filter(overdue).map((row) => row.serial_number).sort(), 'the OKMs marked overdue');
        mock.timers.setTime(start);
        const ofOperator = (await call(t, 'GET', SUMMARY, { token: admin })).json().data;
        assert.deepEqual(comparableSummary(ofOperator), countSummary(rows, overdue));
        assert.equal(ofOperator.pending, await pendingCount(t.db));
        const customerId = Number((await t.db.selectFrom('customers').select('id').where('name', '=', names[0]!).executeTakeFirstOrThrow()).id);
        const ofCustomer = countSummary(await fleetRows(t.db, customerId), overdue);
        const asOperator = (await call(t, 'GET', `${SUMMARY}?customer=${names[0]}`, { token: admin })).json().data;
        assert.deepEqual(comparableSummary(asOperator), ofCustomer);
        const customerToken = await issueTestToken(t, { customer: names[0], scopes: ['okm:read'] });
        const asCustomer = (await call(t, 'GET', SUMMARY, { token: customerToken })).json().data;
        assert.equal(asCustomer.pending, undefined);
        assert.deepEqual({ ...asCustomer, pending: asOperator.pending }, asOperator);
      }),
      { numRuns: kind === 'postgres' ? 12 : 20 },
    );
  });

  test(`a fleet of more than ${FLEET_PASS_STEP} OKMs is walked in several steps: every OKM is counted once and every silent one marked`, async () => {
    const start = newEra();
    const customer = await createCustomer(t.db, `pass-steps-${start}`);
    const count = 2 * FLEET_PASS_STEP + 1;
    const serials = Array.from({ length: count }, (_, index) => `STEP-${start}-${String(index).padStart(5, '0')}`);
    // Every third has never polled, the others polled at `start`, every seventh of them with a
    // long interval of its own (due past the pass).
    for (let from = 0; from < count; from += 500) {
      const slice = serials.slice(from, from + 500);
      await t.db
        .insertInto('okms')
        .values(
          slice.map((serial, offset) => {
            const index = from + offset;
            return { serial_number: serial, customer_id: customer.id, auditing_enabled: 0, status_urls: '[]', polling_interval: index % 7 === 0 ? 3600 : null, overdue_at: index % 3 === 0 ? 0 : null, created_at: start, updated_at: start };
          }),
        )
        .execute();
      const polled = slice.filter((_, offset) => (from + offset) % 3 !== 0);
      if (polled.length > 0) {
        await t.db
          .insertInto('okm_polls')
          .values(polled.map((serial) => ({ serial_number: serial, last_sync_time: start, last_ip: '10.0.0.1', reported: '{}', install_code: null, status_queued_at: null })))
          .execute();
      }
    }
    let steps = 0;
    const countSteps: KyselyPlugin = {
      transformQuery: (args) => args.node,
      async transformResult(args) {
        if (args.result.rows.length > 0 && 'polling_interval' in args.result.rows[0]! && 'last_ip' in args.result.rows[0]!) steps++;
        return args.result;
      },
    };
    const pass = createFleetPass(t.db.withPlugin(countSteps), t.settings);
    const passNow = start + 120_000;

    assert.equal(await pass.runPass({ now: () => passNow }), true);

    assert.ok(steps >= 3, `${steps} steps`);
    const silent = serials.filter((_, index) => index % 3 !== 0 && index % 7 !== 0);
    const marked = await t.db.selectFrom('okms').select('serial_number').where('customer_id', '=', customer.id).where('overdue_at', '=', passNow).orderBy('serial_number').execute();
    assert.deepEqual(
      marked.map((row) => row.serial_number),
      silent,
    );
    const overdueEvents = await t.db.selectFrom('fleet_event_deliveries').select('payload').where('event_type', '=', 'okm.overdue').where('payload', 'like', `%STEP-${start}-%`).execute();
    assert.equal(overdueEvents.length, silent.length);
    const rows = await fleetRows(t.db);
    mock.timers.setTime(start);
    const summary = (await call(t, 'GET', SUMMARY, { token: await adminToken() })).json().data;
    assert.deepEqual(comparableSummary(summary), countSummary(rows, dueBefore(passNow, FLEET_INTERVAL_S)));
    const ofCustomer = (await call(t, 'GET', `${SUMMARY}?customer=${customer.name}`, { token: await adminToken() })).json().data.okms;
    assert.deepEqual(ofCustomer, { total: count, in_step: count - Math.ceil(count / 3), drifting: 0, overdue: silent.length, never_polled: Math.ceil(count / 3), stuck: 0 });
    await releaseLease(t.db, pass.holder);
  });

  test('one runner at a time: while one holds the lease the other\'s pass returns false and changes nothing; once the lease lapses the other takes it', async () => {
    const start = newEra();
    const first = createFleetPass(t.db, t.settings);
    const second = createFleetPass(t.db, t.settings);
    const serial = uniqueSerial('PASS-LEASE');
    await createOkm(t, await adminToken(), serial, { polling_interval: 5 });
    await pollAt(serial, start, { pollingInterval: 5 });
    const lease = () => t.db.selectFrom('background_passes').select(['holder', 'lease_expires_at', 'completed_at']).where('name', '=', FLEET_PASS).executeTakeFirstOrThrow();

    assert.equal(await first.runPass({ now: () => start }), true);
    assert.deepEqual(await lease(), { holder: first.holder, lease_expires_at: start + FLEET_PASS_LEASE_MS, completed_at: start });

    // Silent past its due time (+15 s), but the pass that would mark it is not this runner's.
    assert.equal(await second.runPass({ now: () => start + 16_000 }), false);
    assert.equal(await second.runPass({ now: () => start + FLEET_PASS_LEASE_MS }), false);
    assert.equal(await overdueAt(serial), null);
    assert.deepEqual(await lease(), { holder: first.holder, lease_expires_at: start + FLEET_PASS_LEASE_MS, completed_at: start });

    // Renewed at each step of its pass: the holder keeps it.
    assert.equal(await first.runPass({ now: () => start + 1000 }), true);
    assert.equal((await lease()).lease_expires_at, start + 1000 + FLEET_PASS_LEASE_MS);

    const lapsed = start + 1000 + FLEET_PASS_LEASE_MS + 1;
    assert.equal(await second.runPass({ now: () => lapsed }), true);
    assert.deepEqual(await lease(), { holder: second.holder, lease_expires_at: lapsed + FLEET_PASS_LEASE_MS, completed_at: lapsed });
    assert.equal(await overdueAt(serial), lapsed);
    assert.equal(await first.runPass({ now: () => lapsed + 1 }), false);

    // A lease given up is taken at once.
    await releaseLease(t.db, second.holder);
    assert.equal(await first.runPass({ now: () => lapsed + 2 }), true);
    await releaseLease(t.db, first.holder);
  });

  test('a runner whose pass is between two steps holds the lease: another runner\'s pass meanwhile returns false', async () => {
    // The fleet holds more than FLEET_PASS_STEP OKMs by now (the test above), so the pass pauses between steps.
    const start = newEra();
    assert.ok(Number((await t.db.selectFrom('okms').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n) > FLEET_PASS_STEP);
    const first = createFleetPass(t.db, t.settings);
    const second = createFleetPass(t.db, t.settings);

    const running = first.runPass({ now: () => start, pauseMs: 300 });
    await eventually(async () => (await t.db.selectFrom('background_passes').select('holder').where('name', '=', FLEET_PASS).executeTakeFirstOrThrow()).holder === first.holder);
    const meanwhile = await second.runPass({ now: () => start + 1 });

    assert.equal(meanwhile, false);
    assert.equal(await running, true);
    await releaseLease(t.db, first.holder);
  });
});

forEachDatabase('fleet pass of a server process', (kind) => {
  test('with FLEET_PASS_INTERVAL_MS set the server runs the pass by itself, and gives the lease up when it closes', async () => {
    const t = await buildTestApp(kind, { FLEET_PASS_INTERVAL_MS: '50' });
    let closed = false;
    try {
      const serial = uniqueSerial('PASS-SELF');
      await poll(t, serial);
      await eventually(async () => {
        const counted = await t.db.selectFrom('fleet_summary_snapshot').select('okms').where('customer_id', 'is', null).execute();
        return counted.reduce((sum, row) => sum + Number(row.okms), 0) === 1;
      });
      const lease = await t.db.selectFrom('background_passes').select(['holder', 'completed_at']).where('name', '=', FLEET_PASS).executeTakeFirstOrThrow();
      assert.equal(lease.holder, t.app.fleetPass.holder);
      assert.notEqual(lease.completed_at, null);

      await t.app.close();
      closed = true;

      const released = await t.db.selectFrom('background_passes').select('holder').where('name', '=', FLEET_PASS).executeTakeFirstOrThrow();
      assert.equal(released.holder, null);
    } finally {
      if (!closed) await t.app.close();
      await t.db.destroy();
      await t.database.drop();
    }
  });
});

forEachDatabase('fleet pass of a server process, closed in the middle of a pass', (kind) => {
  // Fastify runs onClose hooks in reverse order: were the lease given up before the pass in
  // progress ended, that pass would take it again at its next step and keep it for FLEET_PASS_LEASE_MS.
  test('closing while a pass runs leaves the lease free for another process', async () => {
    const t = await buildTestApp(kind, { FLEET_PASS_INTERVAL_MS: '1' });
    let closed = false;
    try {
      // Enough OKMs for a pass of several steps, with a pause between them.
      const count = 3 * FLEET_PASS_STEP;
      for (let from = 0; from < count; from += 500) {
        const rows = Array.from({ length: Math.min(500, count - from) }, (_, offset) => ({
          serial_number: `CLOSE-${String(from + offset).padStart(5, '0')}`,
          auditing_enabled: 0,
          status_urls: '[]',
          overdue_at: 0,
          created_at: 1,
          updated_at: 1,
        }));
        await t.db.insertInto('okms').values(rows).execute();
      }
      // Once a pass has counted them, the next starts within a millisecond of its end: close in the middle of one.
      await eventually(async () => Number((await t.db.selectFrom('fleet_summary_snapshot').select((eb) => eb.fn.sum('okms').as('n')).executeTakeFirstOrThrow()).n) === count);
      await new Promise((resolve) => setTimeout(resolve, 20));

      await t.app.close();
      closed = true;

      const lease = await t.db.selectFrom('background_passes').select('holder').where('name', '=', FLEET_PASS).executeTakeFirstOrThrow();
      assert.equal(lease.holder, null);
    } finally {
      if (!closed) await t.app.close();
      await t.db.destroy();
      await t.database.drop();
    }
  });
});
