import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { median } from '../../bench/harness.ts';

test('when the count is odd, the median is the middle value', () => {
  assert.equal(median([1, 2, 9]), 2);
});

test('when the count is even, the median is the mean of the two middle values, not the higher one', () => {
  assert.equal(median([1, 2, 4, 9]), 3);
});

test('when the values are unsorted, the median is taken of them sorted, and the list given is left as it was', () => {
  const values = [9, 1, 4, 2];

  assert.equal(median(values), 3);
  assert.deepEqual(values, [9, 1, 4, 2]);
});

test('when there is a single value, the median is that value', () => {
  assert.equal(median([0.87]), 0.87);
});

test('when the list is empty, median refuses it', () => {
  assert.throws(() => median([]), /empty/);
});

const finiteValues = fc.array(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }), { minLength: 1 });

test('the median of any values lies between their minimum and their maximum', () => {
  fc.assert(
    fc.property(finiteValues, (values) => {
      const middle = median(values);

      assert.ok(middle >= Math.min(...values) && middle <= Math.max(...values), `${middle} of ${values.join(' ')}`);
    }),
  );
});

test('for an odd count, the median is the value with as many values at or below it as at or above it', () => {
  fc.assert(
    fc.property(finiteValues.filter((values) => values.length % 2 === 1), (values) => {
      const middle = median(values);
      const sorted = [...values].sort((a, b) => a - b);

      assert.equal(middle, sorted[(values.length - 1) / 2]);
      assert.ok(values.includes(middle));
    }),
  );
});
