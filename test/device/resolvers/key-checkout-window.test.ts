import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyCheckoutWindow } from '../../../src/device/resolvers/key-checkout-window.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const configured = desiredState({ keyCheckoutWindow: { time: 30, contact: 'closed' } });
const stored = { keyCheckoutWindowTime: 30, keyCheckoutWindowContact: 'closed' };

test('when the time differs, time and contact are both sent', () => {
  assert.deepEqual(keyCheckoutWindow(configured, reportInSync(configured, { keyCheckoutWindowTime: 31 })), stored);
});

test('when the contact differs or is unknown, time and contact are both sent', () => {
  for (const contact of ['open', 'CLOSED', undefined]) {
    assert.deepEqual(keyCheckoutWindow(configured, reportInSync(configured, { keyCheckoutWindowContact: contact })), stored);
  }
});

test('when time and contact match, no correction', () => {
  assert.equal(keyCheckoutWindow(configured, reportInSync(configured)), undefined);
});

test('when no window is configured, no correction whatever the device reports', () => {
  const unconfigured = desiredState();

  assert.equal(keyCheckoutWindow(unconfigured, reportInSync(unconfigured, { keyCheckoutWindowTime: 5, keyCheckoutWindowContact: 'x' })), undefined);
});
