import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retailConfig } from '../../../src/device/resolvers/retail-config.ts';
import { desiredState, reportInSync } from './fixtures.ts';

const auditing = desiredState({ auditingEnabled: true });

test('when auditing is enabled and retailCfg is not 2, retailCfg 2 is sent', () => {
  for (const retailCfg of [0, 1, 3, undefined]) {
    assert.deepEqual(retailConfig(auditing, reportInSync(auditing, { retailCfg })), { retailCfg: 2 }, String(retailCfg));
  }
});

test('when auditing is enabled and retailCfg is 2, no correction', () => {
  assert.equal(retailConfig(auditing, reportInSync(auditing, { retailCfg: 2 })), undefined);
});

test('when auditing is disabled, no correction whatever retailCfg is', () => {
  const notAuditing = desiredState();

  assert.equal(retailConfig(notAuditing, reportInSync(notAuditing, { retailCfg: 0 })), undefined);
});
