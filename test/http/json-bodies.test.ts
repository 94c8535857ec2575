import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonNestingDepth } from '../../src/http/json-bodies.ts';

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('JSON nesting depth', () => {
  test('for any JSON value, the text scan agrees with the depth of the parsed value', () => {
    fc.assert(fc.property(fc.jsonValue({ depthSize: 'large' }), (value) => jsonNestingDepth(JSON.stringify(value)) === depthOf(value)));
  });

  test('brackets and escaped quotes inside strings do not count', () => {
    assert.equal(jsonNestingDepth('{"a":"[[[{{\\"]]"}'), 1);
  });
});
