import { after, before } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, textKeyAt, type CursorListFixture } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';

forEachDatabase('pending OKMs, paged by cursor', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind, { OKM_AUTO_ENROL: 'false' });
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  // The list is the deployment's: each test starts from an empty one.
  cursorListContract('GET /api/v1/pending-okms', async (): Promise<CursorListFixture> => {
    await t.db.deleteFrom('pending_okms').execute();
    return {
      t,
      url: '/api/v1/pending-okms',
      token: admin,
      keyOf: (pending) => pending.serial_number as string,
      keyAt: textKeyAt('NEW-'),
      add: async (serials) => {
        if (serials.length > 0) {
          await t.db
            .insertInto('pending_okms')
            .values(serials.map((serial) => ({ serial_number: String(serial), first_seen_at: 1, last_seen_at: 2, last_ip: '203.0.113.9', firmware_version: null, call_count: 1 })))
            .execute();
        }
      },
      remove: async (serial) => {
        await t.db.deleteFrom('pending_okms').where('serial_number', '=', String(serial)).execute();
      },
    };
  });
});
