import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalDigest } from '../../../src/shared/canonical-json.ts';
import { assetList } from '../../../src/device/resolvers/asset-list.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const items = [{ serial: 'L-2', slot: 1 }, 'L-1'];
const digest = canonicalDigest(items);
const configured = desiredState({ assetList: { digest, items } });

test('when the reported digest differs, the list and its digest are sent', () => {
  assert.deepEqual(assetList(configured, reportInSync(configured, { assetList: '00'.repeat(32) })), { assetList: items, assetListDigest: digest });
});

test('when the digest is unknown, the list and its digest are sent', () => {
  assert.deepEqual(assetList(configured, reportInSync(configured, { assetList: undefined })), { assetList: items, assetListDigest: digest });
});

test('when the reported digest matches in uppercase, no correction', () => {
  assert.equal(assetList(configured, reportInSync(configured, { assetList: digest.toUpperCase() })), undefined);
});

test('when an empty list is configured and the device has no digest, the empty list is sent', () => {
  const empty = desiredState({ assetList: { digest: canonicalDigest([]), items: [] } });

  assert.deepEqual(assetList(empty, reportInSync(empty, { assetList: undefined })), { assetList: [], assetListDigest: canonicalDigest([]) });
});

test('when no list is configured, no correction whatever the device reports', () => {
  const unconfigured = desiredState();

  assert.equal(assetList(unconfigured, reportInSync(unconfigured, { assetList: 'anything' })), undefined);
});
