import { after, before, describe } from 'node:test';
import { findCustomerByName } from '../../src/customers/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, idKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, uniqueSerial } from './admin-helpers.ts';

let okms = 0;

forEachDatabase("an OKM's audit records and messages, paged by cursor", (kind) => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await buildTestApp(kind);
    token = await issueTestToken(t, { customer: 'history', scopes: ['okm:read'] });
  });
  after(() => t.close());

  /** A fresh OKM of the customer; the rows get ids of their own, far above any the database hands out here. */
  async function freshOkm(): Promise<{ serial: string; base: number }> {
    const serial = uniqueSerial('HIST');
    const customer = (await findCustomerByName(t.db, 'history'))!.id;
    await insertOkm(t.db, serial, customer, UNCONFIGURED_OKM, Date.now());
    return { serial, base: 1_000_000 * ++okms };
  }

  describe('audit records', () => {
    cursorListContract('GET /api/v1/okms/{serial}/audit', async (): Promise<CursorListFixture> => {
      const { serial, base } = await freshOkm();
      return {
        t,
        url: `${OKMS}/${serial}/audit`,
        token,
        keyOf: (record) => record.id as number,
        keyAt: idKeyAt(base, 'asc'),
        add: async (ids) => {
          if (ids.length > 0) await t.db.insertInto('okm_audit_records').values(ids.map((id) => ({ id: Number(id), okm_serial: serial, received_at: 1, record: `{"n":${id}}` }))).execute();
        },
        remove: async (id) => {
          await t.db.deleteFrom('okm_audit_records').where('id', '=', Number(id)).execute();
        },
      };
    });
  });

  for (const [name, query, pending] of [
    ['messages', '', undefined],
    ['messages not delivered yet', '?pending=true', true],
    ['messages delivered', '?pending=false', false],
  ] as const) {
    describe(name, () => {
      cursorListContract(`GET /api/v1/okms/{serial}/messages${query}`, async (): Promise<CursorListFixture> => {
        const { serial, base } = await freshOkm();
        const message = (id: number, delivered: boolean) => ({ id, okm_serial: serial, type: 'delete-assets', payload: 'null', created_at: 1, delivered_at: delivered ? 2 : null });
        return {
          t,
          url: `${OKMS}/${serial}/messages${query}`,
          token,
          keyOf: (listed) => listed.id as number,
          // Room after each listed message for one the filter leaves out.
          keyAt: (position) => idKeyAt(base, 'asc')(2 * position),
          add: async (ids) => {
            if (ids.length === 0) return;
            const listed = ids.map((id) => message(Number(id), pending === false));
            const others = pending === undefined ? [] : ids.map((id) => message(Number(id) + 1, pending));
            await t.db.insertInto('okm_messages').values([...listed, ...others]).execute();
          },
          remove: async (id) => {
            await t.db.deleteFrom('okm_messages').where('id', '=', Number(id)).execute();
          },
        };
      });
    });
  }
});
