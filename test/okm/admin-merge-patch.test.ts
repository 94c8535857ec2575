import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyMergePatch } from '../../src/shared/merge-patch.ts';

// RFC 7396, Appendix A.
const RFC_EXAMPLES: [unknown, unknown, unknown][] = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
];

test('applyMergePatch gives the results of the RFC 7396 examples', () => {
  for (const [target, patch, expected] of RFC_EXAMPLES) {
    assert.deepEqual(applyMergePatch(target, patch), expected, JSON.stringify({ target, patch }));
  }
});

test('applyMergePatch leaves its inputs unchanged', () => {
  const target = { a: { b: 1 } };
  const patch = { a: { b: null, c: 2 } };

  applyMergePatch(target, patch);

  assert.deepEqual(target, { a: { b: 1 } });
  assert.deepEqual(patch, { a: { b: null, c: 2 } });
});
