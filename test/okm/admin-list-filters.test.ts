import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE, NEVER_POLLED } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { walkKeys } from '../helpers/cursor-lists.ts';
import { OKMS, call } from './admin-helpers.ts';

const DAY = 86_400_000;

/** What a device's polls leave on an OKM row, as the list filters on it. */
interface PolledState {
  serial: string;
  lastSyncTime: number | null;
  lastCorrection: string | null;
}

type State = 'in_step' | 'drifting' | 'overdue' | 'never_polled';

/**
 * The definitions of docs/okm-admin-api.md, written independently of the SQL that applies them.
 * Overdue: past 3 fleet polling intervals since the last poll, as the fleet pass marks it.
 */
function isIn(state: State, okm: PolledState, fleetPollingInterval: number, now: number): boolean {
  switch (state) {
    case 'never_polled':
      return okm.lastSyncTime === null;
    case 'in_step':
      return okm.lastSyncTime !== null && okm.lastCorrection === null;
    case 'drifting':
      return okm.lastCorrection !== null;
    case 'overdue':
      return okm.lastSyncTime !== null && okm.lastSyncTime + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * fleetPollingInterval < now;
  }
}

const bySerial = (a: PolledState, b: PolledState) => (a.serial < b.serial ? -1 : a.serial > b.serial ? 1 : 0);

let customers = 0;

forEachDatabase('OKM list filters', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  /**
   * A customer of its own holding exactly these OKMs, and its read token: each OKM's row and,
   * once it has polled, its poll row; overdue marked as the fleet pass marks it at `markedAt`
   * (undefined: not marked, for a pass the test runs).
   */
  async function customerWith(okms: PolledState[], markedAt: number | undefined = Date.now()) {
    const name = `filters-${++customers}`;
    const token = await issueTestToken(t, { customer: name, scopes: ['okm:read'] });
    const customer = (await findCustomerByName(t.db, name))!;
    const overdueAt = (okm: PolledState) =>
      okm.lastSyncTime === null ? NEVER_POLLED : markedAt !== undefined && isIn('overdue', okm, t.settings.fleetPollingInterval, markedAt) ? markedAt : null;
    // In statements of 1 000: under both databases' limits of bound parameters.
    for (let start = 0; start < okms.length; start += 1000) {
      const slice = okms.slice(start, start + 1000);
      await t.db
        .insertInto('okms')
        .values(
          slice.map((okm) => ({
            serial_number: okm.serial,
            customer_id: customer.id,
            last_correction: okm.lastCorrection,
            overdue_at: overdueAt(okm),
            auditing_enabled: 0,
            status_urls: '[]',
            created_at: 0,
            updated_at: 0,
          })),
        )
        .execute();
      const polls = slice.flatMap((okm) => (okm.lastSyncTime === null ? [] : [{ serial_number: okm.serial, last_sync_time: okm.lastSyncTime, last_ip: '203.0.113.5', reported: '{}' }]));
      if (polls.length > 0) await t.db.insertInto('okm_polls').values(polls).execute();
    }
    return { name, token };
  }

  const list = (token: string, query: string) => call(t, 'GET', `${OKMS}?${query}`, { token });
  const serialsOf = (response: { json(): { data: { serial_number: string }[] } }) => response.json().data.map((okm) => okm.serial_number);

  /** Never polled, in step, drifting, overdue in step, overdue drifting. */
  function oneOfEach(prefix: string, now: number): PolledState[] {
    return [
      { serial: `${prefix}-A`, lastSyncTime: null, lastCorrection: null },
      { serial: `${prefix}-B`, lastSyncTime: now - 1000, lastCorrection: null },
      { serial: `${prefix}-C`, lastSyncTime: now - 2000, lastCorrection: 'kasDateTime' },
      { serial: `${prefix}-D`, lastSyncTime: now - DAY, lastCorrection: null },
      { serial: `${prefix}-E`, lastSyncTime: now - 2 * DAY, lastCorrection: 'pollingInterval' },
    ];
  }

  test('state picks the OKMs that the fleet summary counts in that state', async () => {
    const prefix = `ST${customers}`;
    const { name, token } = await customerWith(oneOfEach(prefix, Date.now()), undefined);
    // The fleet pass marks the overdue OKMs and counts the summary.
    assert.ok(await t.app.fleetPass.runPass());

    const summary = (await call(t, 'GET', `/api/v1/fleet/summary?customer=${name}`, { token: admin })).json().data.okms;
    const inState = async (state: string) => serialsOf(await list(token, `state=${state}`));

    assert.deepEqual(await inState('never_polled'), [`${prefix}-A`]);
    assert.deepEqual(await inState('in_step'), [`${prefix}-B`, `${prefix}-D`]);
    assert.deepEqual(await inState('drifting'), [`${prefix}-C`, `${prefix}-E`]);
    assert.deepEqual(await inState('overdue'), [`${prefix}-D`, `${prefix}-E`]);
    assert.deepEqual(summary, { total: 5, never_polled: 1, in_step: 2, drifting: 2, overdue: 2, stuck: 0 });
  });

  test('state combines with the other filters', async () => {
    const prefix = `SC${customers}`;
    const { token } = await customerWith(oneOfEach(prefix, Date.now()));

    const response = await list(token, 'state=in_step&overdue=false');

    assert.equal(response.statusCode, 200);
    assert.deepEqual(serialsOf(response), [`${prefix}-B`]);
  });

  test('serial_prefix picks the serial numbers that begin with it, "." "_" and "-" taken literally', async () => {
    const serials = ['P-1', 'P-10', 'P-2', 'P.1', 'P_1', 'P', 'PX-1', 'Q-1', 'p-1'];
    const { token } = await customerWith(serials.map((serial) => ({ serial, lastSyncTime: null, lastCorrection: null })));

    const prefixed = async (prefix: string) => serialsOf(await list(token, `serial_prefix=${prefix}`));

    assert.deepEqual(await prefixed('P-1'), ['P-1', 'P-10']);
    assert.deepEqual(await prefixed('P_'), ['P_1']);
    assert.deepEqual(await prefixed('P.'), ['P.1']);
    assert.deepEqual(await prefixed('P'), ['P', 'P-1', 'P-10', 'P-2', 'P.1', 'PX-1', 'P_1']);
    assert.deepEqual(await prefixed('p'), ['p-1']);
  });

  test('an unknown state, a sort (there is none: the list is by serial number), or a serial_prefix that no serial number could begin with, is refused with 400 naming it', async () => {
    const { token } = await customerWith([]);

    const refused: [string, string][] = [
      ['state=late', 'state'],
      ['sort=serial_number', 'sort'],
      ['sort=last_sync_time', 'sort'],
      ['sort=-last_sync_time', 'sort'],
      ['serial_prefix=a%2Fb', 'serial_prefix'],
      ['serial_prefix=', 'serial_prefix'],
      ['serial_prefix=a%00', 'serial_prefix'],
      [`serial_prefix=${'a'.repeat(65)}`, 'serial_prefix'],
    ];
    for (const [query, name] of refused) {
      const response = await list(token, query);
      assert.equal(response.statusCode, 400, query);
      assert.match(response.json().error_msg, new RegExp(name), query);
    }
  });

  const polledState = (now: number) =>
    fc.record({
      serial: fc.stringMatching(/^[A-Ca-c0-9._-]{1,6}$/),
      // Not within a minute of becoming overdue, which a fleet pass running meanwhile could mark.
      lastSyncTime: fc.option(
        fc.integer({ min: now - 3 * DAY, max: now }).filter((time) => Math.abs(time + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * t.settings.fleetPollingInterval - now) > 60_000),
        { nil: null },
      ),
      lastCorrection: fc.option(fc.constant('kasDateTime'), { nil: null }),
    });

  test('the pages of every filter, walked by cursor, hold exactly the matching OKMs in serial number order, each once', async () => {
    const now = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(polledState(now), { selector: (okm) => okm.serial, maxLength: 40 }),
        fc.option(fc.constantFrom<State>('in_step', 'drifting', 'overdue', 'never_polled'), { nil: undefined }),
        fc.option(fc.boolean(), { nil: undefined }),
        fc.option(fc.stringMatching(/^[A-Ca-c0-9._-]{1,2}$/), { nil: undefined }),
        fc.integer({ min: 1, max: 7 }),
        async (generated, state, overdue, generatedPrefix, limit) => {
          // Serial numbers are unique across customers: each run's begin with a tag of its own.
          const tag = `R${customers}.`;
          const okms = generated.map((okm) => ({ ...okm, serial: tag + okm.serial }));
          const prefix = generatedPrefix === undefined ? undefined : tag + generatedPrefix;
          const { token } = await customerWith(okms, now);
          const expected = okms
            .filter(
              (okm) =>
                (state === undefined || isIn(state, okm, t.settings.fleetPollingInterval, now)) &&
                (overdue === undefined || isIn('overdue', okm, t.settings.fleetPollingInterval, now) === overdue) &&
                (prefix === undefined || okm.serial.startsWith(prefix)),
            )
            .sort(bySerial)
            .map((okm) => okm.serial);
          const filters = [state === undefined ? '' : `state=${state}`, overdue === undefined ? '' : `overdue=${overdue}`, prefix === undefined ? '' : `serial_prefix=${prefix}`].filter((part) => part !== '');

          const walked = await walkKeys({ t, token, url: `${OKMS}?${filters.join('&')}`, keyOf: (okm) => okm.serial_number as string }, limit);

          assert.deepEqual(walked, expected, `${filters.join('&')}, ${limit} a page`);
        },
      ),
      { numRuns: 25 },
    );
  });

  test('a list of thousands, walked by cursor at the largest page size, holds every match once, with and without a filter', async () => {
    const now = Date.now();
    const tag = `DW${customers}`;
    // Shuffled serial numbers; never polled, overdue (a day ago) and drifting OKMs spread over the list, the others polled within 100 s.
    const okms: PolledState[] = Array.from({ length: 4_321 }, (_, index) => ({
      serial: `${tag}-${String((index * 7_919) % 100_003).padStart(6, '0')}`,
      lastSyncTime: index % 13 === 0 ? null : index % 7 === 0 ? now - DAY : now - ((index * 31) % 100) * 1000,
      lastCorrection: index % 3 === 0 ? 'kasDateTime' : null,
    }));
    const { token } = await customerWith(okms, now);

    for (const state of [undefined, 'in_step', 'drifting', 'never_polled', 'overdue'] as const) {
      const expected = okms
        .filter((okm) => state === undefined || isIn(state, okm, t.settings.fleetPollingInterval, now))
        .sort(bySerial)
        .map((okm) => okm.serial);
      const walked = await walkKeys({ t, token, url: `${OKMS}${state === undefined ? '' : `?state=${state}`}`, keyOf: (okm) => okm.serial_number as string }, 500);

      assert.equal(walked.length, expected.length, `state ${state}`);
      assert.deepEqual(walked, expected, `state ${state}`);
    }
  });
});
