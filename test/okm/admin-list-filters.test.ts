import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { SHORT_WALK } from '../../src/okm/admin-repository.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call } from './admin-helpers.ts';

const DAY = 86_400_000;

/** What a device's polls leave on an OKM row, as the list filters and sorts on it. */
interface PolledState {
  serial: string;
  lastSyncTime: number | null;
  lastCorrection: string | null;
}

type State = 'in_step' | 'drifting' | 'overdue' | 'never_polled';
type Sort = 'serial_number' | 'last_sync_time' | '-last_sync_time';

/** The definitions of docs/okm-admin-api.md, written independently of the SQL that applies them. */
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
/** Never polled as the oldest of all; ties by serial number. */
const byLastSync = (a: PolledState, b: PolledState) => (a.lastSyncTime ?? -1) - (b.lastSyncTime ?? -1) || bySerial(a, b);

function sorted(okms: PolledState[], sort: Sort): PolledState[] {
  if (sort === 'serial_number') return [...okms].sort(bySerial);
  const ascending = [...okms].sort(byLastSync);
  return sort === 'last_sync_time' ? ascending : ascending.reverse();
}

let customers = 0;

forEachDatabase('OKM list filters and sorts', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  /** A customer of its own holding exactly these OKMs, and its read token. */
  async function customerWith(okms: PolledState[]) {
    const name = `filters-${++customers}`;
    const token = await issueTestToken(t, { customer: name, scopes: ['okm:read'] });
    const customer = (await findCustomerByName(t.db, name))!;
    // In statements of 1 000: under both databases' limits of bound parameters.
    for (let start = 0; start < okms.length; start += 1000) {
      await t.db
        .insertInto('okms')
        .values(
          okms.slice(start, start + 1000).map((okm) => ({
            serial_number: okm.serial,
            customer_id: customer.id,
            last_sync_time: okm.lastSyncTime,
            last_correction: okm.lastCorrection,
            // As a poll leaves them: due in 3 fleet polling intervals, watched by the overdue sweep.
            due_by: okm.lastSyncTime === null ? null : okm.lastSyncTime + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * t.settings.fleetPollingInterval,
            overdue_at: okm.lastSyncTime === null ? 0 : null,
            auditing_enabled: 0,
            status_urls: '[]',
            created_at: 0,
            updated_at: 0,
          })),
        )
        .execute();
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
    const { name, token } = await customerWith(oneOfEach(prefix, Date.now()));

    const summary = (await call(t, 'GET', `/api/v1/fleet/summary?customer=${name}`, { token: admin })).json().data.okms;
    const inState = async (state: string) => serialsOf(await list(token, `state=${state}`));

    assert.deepEqual(await inState('never_polled'), [`${prefix}-A`]);
    assert.deepEqual(await inState('in_step'), [`${prefix}-B`, `${prefix}-D`]);
    assert.deepEqual(await inState('drifting'), [`${prefix}-C`, `${prefix}-E`]);
    assert.deepEqual(await inState('overdue'), [`${prefix}-D`, `${prefix}-E`]);
    assert.deepEqual(summary, { total: 5, never_polled: 1, in_step: 2, drifting: 2, overdue: 2 });
  });

  test('state combines with the other filters and tells the total of what matches', async () => {
    const prefix = `SC${customers}`;
    const { token } = await customerWith(oneOfEach(prefix, Date.now()));

    const response = await list(token, 'state=in_step&overdue=false');

    assert.equal(response.statusCode, 200);
    assert.deepEqual(serialsOf(response), [`${prefix}-B`]);
    assert.equal(response.json().pagination.total_results, '1');
  });

  test('serial_prefix picks the serial numbers that begin with it, "." "_" and "-" taken literally', async () => {
    const serials = ['P-1', 'P-10', 'P-2', 'P.1', 'P_1', 'P', 'PX-1', 'Q-1', 'p-1'];
    const { token } = await customerWith(serials.map((serial) => ({ serial, lastSyncTime: null, lastCorrection: null })));

    const prefixed = async (prefix: string) => {
      const response = await list(token, `serial_prefix=${prefix}`);
      return { serials: serialsOf(response), total: response.json().pagination.total_results };
    };

    assert.deepEqual(await prefixed('P-1'), { serials: ['P-1', 'P-10'], total: '2' });
    assert.deepEqual(await prefixed('P_'), { serials: ['P_1'], total: '1' });
    assert.deepEqual(await prefixed('P.'), { serials: ['P.1'], total: '1' });
    assert.deepEqual(await prefixed('P'), { serials: ['P', 'P-1', 'P-10', 'P-2', 'P.1', 'PX-1', 'P_1'], total: '7' });
    assert.deepEqual(await prefixed('p'), { serials: ['p-1'], total: '1' });
  });

  test('sort=last_sync_time lists never polled first, then oldest poll first; -last_sync_time the exact reverse', async () => {
    const now = Date.now();
    const okms = [
      { serial: 'S-new', lastSyncTime: now, lastCorrection: null },
      { serial: 'S-never-b', lastSyncTime: null, lastCorrection: null },
      { serial: 'S-old', lastSyncTime: now - DAY, lastCorrection: null },
      { serial: 'S-never-a', lastSyncTime: null, lastCorrection: null },
      { serial: 'S-tie-b', lastSyncTime: now - 5, lastCorrection: null },
      { serial: 'S-tie-a', lastSyncTime: now - 5, lastCorrection: null },
    ];
    const { token } = await customerWith(okms);

    const ascending = serialsOf(await list(token, 'sort=last_sync_time'));
    const descending = serialsOf(await list(token, 'sort=-last_sync_time'));
    const bySerialNumber = serialsOf(await list(token, 'sort=serial_number'));

    assert.deepEqual(ascending, ['S-never-a', 'S-never-b', 'S-old', 'S-tie-a', 'S-tie-b', 'S-new']);
    assert.deepEqual(descending, [...ascending].reverse());
    assert.deepEqual(bySerialNumber, ['S-never-a', 'S-never-b', 'S-new', 'S-old', 'S-tie-a', 'S-tie-b']);
  });

  test('an unknown state or sort, or a serial_prefix that no serial number could begin with, is refused with 400 naming it', async () => {
    const { token } = await customerWith([]);

    const refused: [string, string][] = [
      ['state=late', 'state'],
      ['sort=serial', 'sort'],
      ['sort=-serial_number', 'sort'],
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
      lastSyncTime: fc.option(fc.integer({ min: now - 3 * DAY, max: now }), { nil: null }),
      lastCorrection: fc.option(fc.constant('kasDateTime'), { nil: null }),
    });

  test('every page of every filter and sort holds exactly the slice of the whole ordered list that an offset would give', async () => {
    const now = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(polledState(now), { selector: (okm) => okm.serial, maxLength: 40 }),
        fc.constantFrom<Sort>('serial_number', 'last_sync_time', '-last_sync_time'),
        fc.option(fc.constantFrom<State>('in_step', 'drifting', 'overdue', 'never_polled'), { nil: undefined }),
        fc.option(fc.stringMatching(/^[A-Ca-c0-9._-]{1,2}$/), { nil: undefined }),
        fc.integer({ min: 1, max: 7 }),
        async (generated, sort, state, generatedPrefix, perPage) => {
          // Serial numbers are unique across customers: each run's begin with a tag of its own.
          const tag = `R${customers}.`;
          const okms = generated.map((okm) => ({ ...okm, serial: tag + okm.serial }));
          const prefix = generatedPrefix === undefined ? undefined : tag + generatedPrefix;
          const { token } = await customerWith(okms);
          const expected = sorted(
            okms.filter(
              (okm) => (state === undefined || isIn(state, okm, t.settings.fleetPollingInterval, now)) && (prefix === undefined || okm.serial.startsWith(prefix)),
            ),
            sort,
          ).map((okm) => okm.serial);
          const filters = `sort=${sort}${state === undefined ? '' : `&state=${state}`}${prefix === undefined ? '' : `&serial_prefix=${prefix}`}`;

          for (let page = 1; page <= Math.ceil(expected.length / perPage) + 1; page++) {
            const response = await list(token, `${filters}&page=${page}&results_per_page=${perPage}`);
            assert.equal(response.statusCode, 200, response.body);
            assert.deepEqual(serialsOf(response), expected.slice((page - 1) * perPage, page * perPage), `${filters} page ${page}`);
            assert.equal(response.json().pagination.total_results, String(expected.length));
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  test('pages deeper than a short walk, found by walking from the end in the reverse order, hold the offset slice in every sort, with and without a filter', async () => {
    const now = Date.now();
    const tag = `DW${customers}`;
    // Shuffled serial numbers; never polled, ties of last sync time and drifting OKMs spread over the list.
    const okms: PolledState[] = Array.from({ length: 2 * SHORT_WALK + 2_345 }, (_, index) => ({
      serial: `${tag}-${String((index * 7_919) % 100_003).padStart(6, '0')}`,
      lastSyncTime: index % 13 === 0 ? null : now - ((index * 31) % 4_999) * 1000,
      lastCorrection: index % 3 === 0 ? 'kasDateTime' : null,
    }));
    const { token } = await customerWith(okms);

    for (const sort of ['serial_number', 'last_sync_time', '-last_sync_time'] as const) {
      for (const state of [undefined, 'in_step', 'drifting'] as const) {
        const expected = sorted(
          okms.filter((okm) => state === undefined || isIn(state, okm, t.settings.fleetPollingInterval, now)),
          sort,
        ).map((okm) => okm.serial);
        const filters = `sort=${sort}${state === undefined ? '' : `&state=${state}`}`;
        for (const perPage of [30, 7]) {
          const lastPage = Math.ceil(expected.length / perPage);
          const pages = [Math.floor(SHORT_WALK / perPage), Math.floor(SHORT_WALK / perPage) + 2, Math.ceil(lastPage / 2), Math.ceil(lastPage / 2) + 1, lastPage - 1, lastPage, lastPage + 1];
          for (const page of pages) {
            const response = await list(token, `${filters}&page=${page}&results_per_page=${perPage}`);

            assert.equal(response.statusCode, 200, response.body);
            assert.deepEqual(serialsOf(response), expected.slice((page - 1) * perPage, page * perPage), `${filters} page ${page} of ${perPage}`);
            assert.equal(response.json().pagination.total_results, String(expected.length));
          }
        }
      }
    }
  });
});
