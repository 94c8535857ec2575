import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalDigest } from '../../../src/shared/canonical-json.ts';
import { usersAssets } from '../../../src/device/resolvers/users-assets.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const items = [{ serial: 'L-2', slot: 1 }, 'L-1'];
const digest = canonicalDigest(items);
const configured = desiredState({ usersAssets: { digest, items } });

test('when the reported digest differs, the list and its digest are sent', () => {
  assert.deepEqual(usersAssets(configured, reportInSync(configured, { usersAssets: '00'.repeat(32) })), { usersAssets: items, usersAssetsDigest: digest });
});

test('when the digest is unknown, the list and its digest are sent', () => {
  assert.deepEqual(usersAssets(configured, reportInSync(configured, { usersAssets: undefined })), { usersAssets: items, usersAssetsDigest: digest });
});

test('when the reported digest matches in uppercase, no correction', () => {
  assert.equal(usersAssets(configured, reportInSync(configured, { usersAssets: digest.toUpperCase() })), undefined);
});

test('when an empty list is configured and the device has no digest, the empty list is sent', () => {
  const empty = desiredState({ usersAssets: { digest: canonicalDigest([]), items: [] } });

  assert.deepEqual(usersAssets(empty, reportInSync(empty, { usersAssets: undefined })), { usersAssets: [], usersAssetsDigest: canonicalDigest([]) });
});

test('when no list is configured, no correction whatever the device reports', () => {
  const unconfigured = desiredState();

  assert.equal(usersAssets(unconfigured, reportInSync(unconfigured, { usersAssets: 'anything' })), undefined);
});
