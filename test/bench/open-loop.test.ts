import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openLoopRates } from '../../bench/open-loop.ts';

describe('the --open-loop option of the poll benches', () => {
  it('reads the rates in the order given', () => {
    assert.deepEqual(openLoopRates('2000,5000'), [2000, 5000]);
    assert.deepEqual(openLoopRates('5000'), [5000]);
  });

  it('reads none as no open loop', () => {
    assert.deepEqual(openLoopRates('none'), []);
  });

  it('refuses a rate that is not a whole number of polls a second above zero', () => {
    for (const option of ['', '0', '2000,', '2000,x', '-5', '2.5', 'NONE']) {
      assert.throws(() => openLoopRates(option), /--open-loop: expected rates such as 2000,5000 or none/, option);
    }
  });
});
