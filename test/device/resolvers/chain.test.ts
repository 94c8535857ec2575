import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { resolve } from '../../../src/device/resolvers/index.ts';
import type { DesiredState } from '../../../src/device/resolvers/types.ts';
import { anyDesiredState, anyReportedState } from './arbitraries.ts';
import { canonicalDigest } from '../../../src/shared/canonical-json.ts';
import { applyCorrection } from '../../../src/simulator/device.ts';
import { desiredState, firmwareOffer, reportInSync, SEED_ORDER, SERVER_TIME } from './fixtures.ts';
import type { ReportedState } from '../../../src/device/reported.ts';

const everythingConfigured = desiredState({
  pendingMessage: { id: 1, type: 'delete-assets', payload: null },
  firmware: { kas: firmwareOffer('2.10.0'), batch_key: firmwareOffer('1.2'), wireless_key: firmwareOffer('3.0') },
  cacheMode: 2,
  keyCheckoutWindow: { time: 30, contact: 'open' },
  auditingEnabled: true,
  assetList: { digest: canonicalDigest(['L-1']), items: ['L-1'] },
  usersAssets: { digest: canonicalDigest([]), items: [] },
  pollingInterval: 60,
});

const knowsNothing: ReportedState = Object.fromEntries(
  Object.keys(reportInSync(everythingConfigured)).map((name) => [name, undefined]),
) as unknown as ReportedState;

test('when the device matches the desired state, no correction', () => {
  const desired = { ...everythingConfigured, pendingMessage: null };

  assert.equal(resolve(desired, reportInSync(desired)), undefined);
});

test('when everything differs, one correction per poll comes in seed order (resolvers 2 to 13, contract §0.4)', () => {
  let desired: DesiredState = everythingConfigured;
  let reported = knowsNothing;
  const answeredBy: string[] = [];

  for (let correction = resolve(desired, reported); correction; correction = resolve(desired, reported)) {
    answeredBy.push(Object.keys(correction)[0]!);
    reported = applyCorrection(reported, correction);
    desired = { ...desired, pendingMessage: null };
  }

  assert.deepEqual(answeredBy, SEED_ORDER);
});

test('when two parameters differ, the earlier resolver answers and the next poll gets the later one', () => {
  const desired = { ...everythingConfigured, pendingMessage: null };
  const reported = reportInSync(desired, { kasDateTime: undefined, pollingInterval: 4 });

  const first = resolve(desired, reported)!;
  const second = resolve(desired, applyCorrection(reported, first));

  assert.deepEqual(first, { kasDateTime: SERVER_TIME });
  assert.deepEqual(second, { pollingInterval: 60 });
});

test('whatever the device reports, applying each correction converges to no correction within 13 polls', () => {
  fc.assert(
    fc.property(anyDesiredState, anyReportedState, (desired, initial) => {
      let reported = initial;
      for (let poll = 1; poll <= 13; poll++) {
        const correction = resolve(desired, reported);
        if (!correction) return true;
        reported = applyCorrection(reported, correction);
      }
      return false;
    }),
  );
});
