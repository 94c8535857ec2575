import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pollingInterval } from '../../../src/device/resolvers/polling-interval.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const reporting = (effective: number, reported: number | undefined) => {
  const desired = desiredState({ pollingInterval: effective });
  return pollingInterval(desired, reportInSync(desired, { pollingInterval: reported }));
};

test('when the reported interval is the effective one at the range ends (5, 3600), no correction', () => {
  assert.equal(reporting(5, 5), undefined);
  assert.equal(reporting(3600, 3600), undefined);
});

test('when the reported interval is just out of range (4, 3601), the effective interval is sent', () => {
  assert.deepEqual(reporting(5, 4), { pollingInterval: 5 });
  assert.deepEqual(reporting(3600, 3601), { pollingInterval: 3600 });
});

test('when the reported interval differs or is unknown, the effective interval is sent', () => {
  assert.deepEqual(reporting(150, 60), { pollingInterval: 150 });
  assert.deepEqual(reporting(150, undefined), { pollingInterval: 150 });
});
