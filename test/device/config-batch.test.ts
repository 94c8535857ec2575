import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { queueMessage } from '../../src/okm/messages-repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { findOkm, insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { allMessages, freezeServerClock, newSerial, poll, SERVER_TIME } from './config-helpers.ts';

// Polls that arrive together are recorded in one transaction where the dialect batches them (SQLite).
forEachDatabase('config polls arriving together', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => (t = await buildTestApp(kind)));
  after(() => t.close());

  test('each poll of a batch gets its own answer, and each is recorded', async () => {
    const known = Array.from({ length: 12 }, () => newSerial());
    for (const [index, serial] of known.entries()) {
      await insertOkm(t.db, serial, null, { ...UNCONFIGURED_OKM, pollingInterval: 60 + index }, 1000);
    }
    const withMessage = known[3]!;
    const message = await queueMessage(t.db, withMessage, 'delete-assets');
    const unknown = newSerial();
    const inSync = { kasDateTime: SERVER_TIME, auditUrl: t.settings.auditUrl, kasFirmware: '1.0.0', cacheMode: 1 };

    const [enrolled, ...responses] = await Promise.all([
      poll(t, unknown, inSync),
      ...known.map((serial) => poll(t, serial, { ...inSync, pollingInterval: 1, installCode: '12345' })),
    ]);

    assert.equal(enrolled!.statusCode, 204);
    assert.deepEqual(
      responses.map((response) => response.json()),
      known.map((serial, index) =>
        serial === withMessage ? { message: { id: message.id, type: 'delete-assets', payload: null } } : { pollingInterval: 60 + index },
      ),
    );
    for (const serial of [unknown, ...known]) assert.equal((await findOkm(t.db, serial))?.lastSyncTime, SERVER_TIME);
    assert.equal((await allMessages(t.db, withMessage))[0]?.deliveredAt, SERVER_TIME);
  });
});
