import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditUrl } from '../../../src/device/resolvers/audit-url.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const desired = desiredState({ auditUrl: '/api/v1/audit' });

test('when auditUrl is missing or any other text, the service audit URL is sent', () => {
  for (const reported of [undefined, '', '/api/v1/audit/', 'http://host/api/v1/audit', '/API/V1/AUDIT']) {
    assert.deepEqual(auditUrl(desired, reportInSync(desired, { auditUrl: reported })), { auditUrl: '/api/v1/audit' }, String(reported));
  }
});

test('when auditUrl is the service audit URL, no correction', () => {
  assert.equal(auditUrl(desired, reportInSync(desired, { auditUrl: '/api/v1/audit' })), undefined);
});
