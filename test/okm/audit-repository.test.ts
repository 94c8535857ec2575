import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { appendAuditRecords, AUDIT_RECORD_PAGES, listAuditRecords } from '../../src/okm/audit-repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

forEachDatabase('audit record repository', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    await insertOkm(t.db, 'OKM-1', null, UNCONFIGURED_OKM, 1000);
  });
  after(() => t.close());

  test('records are listed in arrival order, a page at a time, each page after the cursor of the one before', async () => {
    await appendAuditRecords(t.db, 'OKM-1', [{ n: 1 }, { n: 2 }, { n: 3 }], 2000);

    const first = await listAuditRecords(t.db, 'OKM-1', { after: undefined, limit: 2 });
    const second = await listAuditRecords(t.db, 'OKM-1', { after: AUDIT_RECORD_PAGES.decode(first.nextCursor ?? undefined), limit: 2 });

    assert.deepEqual(
      first.items.map(({ record }) => record),
      [{ n: 1 }, { n: 2 }],
    );
    assert.deepEqual(
      second.items.map(({ record, receivedAt, serialNumber }) => ({ record, receivedAt, serialNumber })),
      [{ record: { n: 3 }, receivedAt: 2000, serialNumber: 'OKM-1' }],
    );
    assert.equal(second.nextCursor, null);
  });

  test('appending for an unknown OKM stores nothing and says so', async () => {
    const stored = await appendAuditRecords(t.db, 'NOPE', [{ n: 1 }], 2000);

    assert.equal(stored, false);
    assert.deepEqual(await listAuditRecords(t.db, 'NOPE', { after: undefined, limit: 10 }), { items: [], nextCursor: null });
  });
});
