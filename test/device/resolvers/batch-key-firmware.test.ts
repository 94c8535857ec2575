import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchKeyFirmware } from '../../../src/device/resolvers/batch-key-firmware.ts';
import { desiredState, firmwareOffer, reportInSync } from './fixtures.ts';

const desired = desiredState({ firmware: { ...desiredState().firmware, batch_key: firmwareOffer('2.10.0') } });
const offered = { batchKeyFirmware: { version: '2.10.0', url: 'https://firmware.example/2.10.0.bin', sha256: 'ab'.repeat(32) } };

test('when the effective release is newer by number (2.10.0 against 2.9.9), it is offered with url and sha256', () => {
  assert.deepEqual(batchKeyFirmware(desired, reportInSync(desired, { batchKeyFirmware: '2.9.9' })), offered);
});

test('when the device runs the effective release, no correction', () => {
  assert.equal(batchKeyFirmware(desired, reportInSync(desired, { batchKeyFirmware: '2.10.0' })), undefined);
});

test('when the device reports the same version with fewer parts (2.10), no correction', () => {
  assert.equal(batchKeyFirmware(desired, reportInSync(desired, { batchKeyFirmware: '2.10' })), undefined);
});

test('when the device runs a newer version than the effective release, no correction (never a downgrade)', () => {
  assert.equal(batchKeyFirmware(desired, reportInSync(desired, { batchKeyFirmware: '3.0' })), undefined);
});

test('when the version is missing or unparsable, the release is offered', () => {
  for (const reported of [undefined, '', 'abc', '2.10.0-beta', '1.2.3.4.5']) {
    assert.deepEqual(batchKeyFirmware(desired, reportInSync(desired, { batchKeyFirmware: reported })), offered, String(reported));
  }
});

test('when no release of the kind is known, no correction', () => {
  const unknown = desiredState();

  assert.equal(batchKeyFirmware(unknown, reportInSync(unknown, { batchKeyFirmware: undefined })), undefined);
});
