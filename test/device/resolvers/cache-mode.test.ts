import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheMode } from '../../../src/device/resolvers/cache-mode.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const configured = desiredState({ cacheMode: 2 });
const unconfigured = desiredState();

test('when the configured mode differs from the reported one, the configured mode is sent', () => {
  assert.deepEqual(cacheMode(configured, reportInSync(configured, { cacheMode: 1 })), { cacheMode: 2 });
});

test('when the device reports 0 (unknown), the configured mode is sent', () => {
  const disabled = desiredState({ cacheMode: 1 });

  assert.deepEqual(cacheMode(disabled, reportInSync(disabled, { cacheMode: 0 })), { cacheMode: 1 });
});

test('when the reported mode is the configured one, no correction', () => {
  assert.equal(cacheMode(configured, reportInSync(configured, { cacheMode: 2 })), undefined);
});

test('when no mode is configured (not supported), disabled is sent to a device that is not disabled', () => {
  for (const reported of [0, 2, 7, undefined]) {
    assert.deepEqual(cacheMode(unconfigured, reportInSync(unconfigured, { cacheMode: reported })), { cacheMode: 1 }, String(reported));
  }
});

test('when no mode is configured and the device is disabled, no correction', () => {
  assert.equal(cacheMode(unconfigured, reportInSync(unconfigured, { cacheMode: 1 })), undefined);
});
