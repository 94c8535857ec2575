import { after, before, describe } from 'node:test';
import type { Insertable } from 'kysely';
import { findCustomerByName } from '../../src/customers/repository.ts';
import type { OkmPollsTable, OkmsTable } from '../../src/db/schema.ts';
import { NEVER_POLLED } from '../../src/okm/fleet-states.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, textKeyAt, type CursorListFixture, type ListKey } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS } from './admin-helpers.ts';

const DAY = 86_400_000;

/** How a stored OKM looks to the list's filters. */
type Kind = 'in_step' | 'drifting' | 'never_polled' | 'overdue';

/** An OKM's row and, unless it never polled, its poll row, as its polls and the fleet pass leave them. */
function okmRows(serial: string, customerId: number | null, kind: Kind, firmwareVersion: string, now: number): { okm: Insertable<OkmsTable>; poll?: Insertable<OkmPollsTable> } {
  const polledAt = kind === 'overdue' ? now - DAY : now - 1000;
  return {
    okm: {
      serial_number: serial,
      customer_id: customerId,
      auditing_enabled: 0,
      status_urls: '[]',
      last_correction: kind === 'drifting' ? 'kasDateTime' : null,
      firmware_version: firmwareVersion,
      // Never polled; marked overdue by the fleet pass a minute ago; or neither.
      overdue_at: kind === 'never_polled' ? NEVER_POLLED : kind === 'overdue' ? now - 60_000 : null,
      created_at: 0,
      updated_at: 0,
    },
    ...(kind === 'never_polled' ? {} : { poll: { serial_number: serial, last_sync_time: polledAt, last_ip: '203.0.113.5', reported: '{}' } }),
  };
}

interface Variant {
  /** The filters of the list (query string values), given the fixture's serial prefix. */
  query: (prefix: string) => string;
  /** Whose list: a customer of its own, or an admin's (of OKMs without a customer when `unassigned`). */
  as: 'customer' | 'admin';
  unassigned?: boolean;
  /** An admin's list naming the fixture's customer (?customer=). */
  namesCustomer?: boolean;
  /** What the listed OKMs are, and what each is stored beside that the filter leaves out. */
  listed: { kind: Kind; firmware: string };
  decoy?: { kind: Kind; firmware: string };
}

const VARIANTS: Record<string, Variant> = {
  "a customer's OKMs": { query: () => '', as: 'customer', listed: { kind: 'in_step', firmware: '2.1.0' } },
  'the whole fleet (admin), serial_prefix': { query: (prefix) => `serial_prefix=${prefix}`, as: 'admin', listed: { kind: 'drifting', firmware: '2.1.0' } },
  'unassigned=true (admin), serial_prefix': { query: (prefix) => `unassigned=true&serial_prefix=${prefix}`, as: 'admin', unassigned: true, listed: { kind: 'in_step', firmware: '2.1.0' } },
  'state=in_step': { query: () => 'state=in_step', as: 'customer', listed: { kind: 'in_step', firmware: '2.1.0' }, decoy: { kind: 'drifting', firmware: '2.1.0' } },
  'state=drifting': { query: () => 'state=drifting', as: 'customer', listed: { kind: 'drifting', firmware: '2.1.0' }, decoy: { kind: 'in_step', firmware: '2.1.0' } },
  'state=never_polled': { query: () => 'state=never_polled', as: 'customer', listed: { kind: 'never_polled', firmware: '2.1.0' }, decoy: { kind: 'drifting', firmware: '2.1.0' } },
  'state=overdue': { query: () => 'state=overdue', as: 'customer', listed: { kind: 'overdue', firmware: '2.1.0' }, decoy: { kind: 'in_step', firmware: '2.1.0' } },
  'overdue=true': { query: () => 'overdue=true', as: 'customer', listed: { kind: 'overdue', firmware: '2.1.0' }, decoy: { kind: 'in_step', firmware: '2.1.0' } },
  'state=never_polled (admin, a customer named)': {
    query: () => 'state=never_polled',
    as: 'admin',
    namesCustomer: true,
    listed: { kind: 'never_polled', firmware: '2.1.0' },
    decoy: { kind: 'overdue', firmware: '2.1.0' },
  },
  'overdue=false': { query: () => 'overdue=false', as: 'customer', listed: { kind: 'in_step', firmware: '2.1.0' }, decoy: { kind: 'overdue', firmware: '2.1.0' } },
  firmware_version: { query: () => 'firmware_version=3.0.1', as: 'customer', listed: { kind: 'in_step', firmware: '3.0.1' }, decoy: { kind: 'in_step', firmware: '3.0.0' } },
  'state=drifting&firmware_version (admin, a customer named)': {
    query: () => 'state=drifting&firmware_version=3.0.1',
    as: 'admin',
    namesCustomer: true,
    listed: { kind: 'drifting', firmware: '3.0.1' },
    decoy: { kind: 'drifting', firmware: '3.0.0' },
  },
};

let scopes = 0;

forEachDatabase('OKM list paged by cursor', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  for (const [name, variant] of Object.entries(VARIANTS)) {
    describe(name, () => {
      const fixture = async (): Promise<CursorListFixture> => {
        const scope = ++scopes;
        const prefix = `CUR${scope}-`;
        const customerName = `cursor-${scope}`;
        const customerToken = await issueTestToken(t, { customer: customerName, scopes: ['okm:read'] });
        const customerId = variant.unassigned ? null : (await findCustomerByName(t.db, customerName))!.id;
        const query = [variant.query(prefix), variant.namesCustomer ? `customer=${customerName}` : ''].filter((part) => part !== '').join('&');
        const store = async (rows: ReturnType<typeof okmRows>[]) => {
          if (rows.length === 0) return;
          await t.db.insertInto('okms').values(rows.map((row) => row.okm)).execute();
          const polls = rows.flatMap((row) => (row.poll === undefined ? [] : [row.poll]));
          if (polls.length > 0) await t.db.insertInto('okm_polls').values(polls).execute();
        };
        return {
          t,
          url: query === '' ? OKMS : `${OKMS}?${query}`,
          token: variant.as === 'admin' ? admin : customerToken,
          keyOf: (okm) => okm.serial_number as string,
          keyAt: textKeyAt(prefix),
          add: async (keys: readonly ListKey[]) => {
            const now = Date.now();
            const listed = keys.map((key) => okmRows(String(key), customerId, variant.listed.kind, variant.listed.firmware, now));
            // A decoy right after each listed OKM in serial number order, which the filter must leave out.
            const decoys = variant.decoy === undefined ? [] : keys.map((key) => okmRows(`${key}-x`, customerId, variant.decoy!.kind, variant.decoy!.firmware, now));
            await store([...listed, ...decoys]);
          },
          remove: async (key) => {
            await t.db.deleteFrom('okm_polls').where('serial_number', '=', String(key)).execute();
            await t.db.deleteFrom('okms').where('serial_number', '=', String(key)).execute();
          },
        };
      };
      cursorListContract(`GET /api/v1/okms, ${name}`, fixture);
    });
  }
});
