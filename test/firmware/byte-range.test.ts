import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRange } from '../../src/firmware/byte-range.ts';

const SIZE = 1000;

test('bytes=a-b is the range from a to b inclusive', () => {
  assert.deepEqual(parseRange('bytes=0-99', SIZE), { kind: 'partial', range: { start: 0, end: 99 } });
});

test('bytes=a- runs to the end of the file', () => {
  assert.deepEqual(parseRange('bytes=900-', SIZE), { kind: 'partial', range: { start: 900, end: 999 } });
});

test('bytes=-n is the last n bytes, or the whole file when n exceeds its size', () => {
  assert.deepEqual(parseRange('bytes=-10', SIZE), { kind: 'partial', range: { start: 990, end: 999 } });
  assert.deepEqual(parseRange('bytes=-5000', SIZE), { kind: 'partial', range: { start: 0, end: 999 } });
});

test('an end past the file is cut to its last byte', () => {
  assert.deepEqual(parseRange('bytes=500-5000', SIZE), { kind: 'partial', range: { start: 500, end: 999 } });
});

test('a start at or past the end of the file, or an empty suffix, is unsatisfiable', () => {
  for (const header of ['bytes=1000-', 'bytes=1000-1001', 'bytes=-0']) {
    assert.deepEqual(parseRange(header, SIZE), { kind: 'unsatisfiable' }, header);
  }
});

test('no header, several ranges, other units, malformed or reversed ranges give the whole file', () => {
  for (const header of [undefined, 'bytes=0-1,5-6', 'items=0-1', 'bytes=-', 'bytes=a-b', 'bytes=10-5', 'bytes 0-1']) {
    assert.deepEqual(parseRange(header, SIZE), { kind: 'whole' }, String(header));
  }
});
