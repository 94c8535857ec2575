import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { queueMessage } from '../../src/okm/messages-repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { allMessages } from './config-helpers.ts';

forEachDatabase('buffered message repository', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    await insertOkm(t.db, 'OKM-1', null, UNCONFIGURED_OKM, 1000);
  });
  after(() => t.close());

  test('queued messages are listed oldest first, pending', async () => {
    const first = await queueMessage(t.db, 'OKM-1', 'delete-assets', null, 2000);
    const second = await queueMessage(t.db, 'OKM-1', 'note', { text: 'hi' }, 3000);

    const messages = await allMessages(t.db, 'OKM-1');

    assert.deepEqual(messages, [
      { id: first.id, serialNumber: 'OKM-1', type: 'delete-assets', payload: null, payloadJson: 'null', createdAt: 2000, deliveredAt: null },
      { id: second.id, serialNumber: 'OKM-1', type: 'note', payload: { text: 'hi' }, payloadJson: '{"text":"hi"}', createdAt: 3000, deliveredAt: null },
    ]);
  });

  test('queueing a message for an unknown OKM fails', async () => {
    await assert.rejects(queueMessage(t.db, 'NOPE', 'delete-assets'));
  });
});
