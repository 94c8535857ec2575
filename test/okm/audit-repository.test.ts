import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { appendAuditRecords, listAuditRecords } from '../../src/okm/audit-repository.ts';
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

  test('records are listed in arrival order, a page at a time, with the total', async () => {
    await appendAuditRecords(t.db, 'OKM-1', [{ n: 1 }, { n: 2 }, { n: 3 }], 2000);

    const page = await listAuditRecords(t.db, 'OKM-1', 2, 2);

    assert.equal(page.total, 3);
    assert.deepEqual(
      page.records.map(({ record, receivedAt, serialNumber }) => ({ record, receivedAt, serialNumber })),
      [{ record: { n: 3 }, receivedAt: 2000, serialNumber: 'OKM-1' }],
    );
  });

  test('appending for an unknown OKM stores nothing and says so', async () => {
    const stored = await appendAuditRecords(t.db, 'NOPE', [{ n: 1 }], 2000);

    assert.equal(stored, false);
    assert.equal((await listAuditRecords(t.db, 'NOPE', 1, 10)).total, 0);
  });
});
