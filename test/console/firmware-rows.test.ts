import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { byteSize, compareVersionsNewestFirst, firmwareRows, type CatalogRelease } from '../../console/src/firmware-rows.ts';

const release = (version: string): CatalogRelease => ({ version, source: 'url', url: `https://firmware.example/${version}.bin`, sha256: 'ab'.repeat(32), size: null, created_at: '2026-11-22T10:00:00Z' });

test('versions sort newest first by their numbers, not as text; other text after them', () => {
  const sorted = ['2.9.0', '2.10.0', '2.10', 'beta-7', '10.0.0', '2.10.0.1', '0.1'].sort(compareVersionsNewestFirst);
  assert.deepEqual(sorted, ['10.0.0', '2.10.0.1', '2.10.0', '2.10', '2.9.0', '0.1', 'beta-7']);
});

test('version order is a total order: antisymmetric, and equal only for the same text', () => {
  const version = fc.oneof(fc.array(fc.nat(30), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.')), fc.string({ maxLength: 6 }));
  fc.assert(
    fc.property(version, version, (a, b) => {
      const forward = Math.sign(compareVersionsNewestFirst(a, b));
      assert.equal(forward, -Math.sign(compareVersionsNewestFirst(b, a)) || 0);
      if (forward === 0) assert.equal(a, b);
    }),
  );
});

test('one row per version in the catalog or run by OKMs, with the OKM count and the latest marked', () => {
  const rows = firmwareRows([release('2.4.1'), release('2.5.0')], [{ version: '2.4.1', okms: 140 }, { version: '2.2.0', okms: 9 }], '2.4.1');
  assert.deepEqual(
    rows.map(({ version, okms, isLatest, release: inCatalog }) => [version, okms, isLatest, inCatalog !== null]),
    [
      ['2.5.0', 0, false, true],
      ['2.4.1', 140, true, true],
      ['2.2.0', 9, false, false],
    ],
  );
});

test('sizes are written in the largest unit under 1024', () => {
  assert.deepEqual([byteSize(512), byteSize(2048), byteSize(1_843_200), byteSize(3 * 1024 ** 3)], ['512 bytes', '2.0 KB', '1.8 MB', '3.0 GB']);
});
