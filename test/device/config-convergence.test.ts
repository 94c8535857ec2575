import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { OkmSettings } from '../../src/okm/model.ts';
import { REPORTED_PARAMETERS } from '../../src/shared/reported-values.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { addRelease, freezeServerClock, newSerial, poll, SERVER_TIME, type DeviceParameters } from './config-helpers.ts';
import { anyFirmwareVersion } from './resolvers/arbitraries.ts';
import { parametersAfter } from '../../src/simulator/device.ts';

const CATALOG = { kas: ['2.9.9', '2.10.0'], batch_key: ['1.0', '1.2'], wireless_key: ['3.0'] } as const;

const list = fc.option(fc.array(fc.oneof(fc.string(), fc.record({ lock: fc.string(), slot: fc.nat() })), { maxLength: 4 }), { nil: null });

/** Any valid OKM configuration; firmware pins are catalog versions. */
const anyOkmSettings: fc.Arbitrary<OkmSettings> = fc.record({
  cacheMode: fc.constantFrom(null, 1 as const, 2 as const),
  keyCheckoutWindow: fc.option(fc.record({ time: fc.nat({ max: 86_400 }), contact: fc.constantFrom('open' as const, 'closed' as const) }), { nil: null }),
  auditingEnabled: fc.boolean(),
  assetList: list,
  usersAssets: list,
  pollingInterval: fc.option(fc.integer({ min: 5, max: 3600 }), { nil: null }),
  firmware: fc.record({
    kas: fc.constantFrom(null, ...CATALOG.kas),
    batch_key: fc.constantFrom(null, ...CATALOG.batch_key),
    wireless_key: fc.constantFrom(null, ...CATALOG.wireless_key),
  }),
  statusUrls: fc.constant([]),
});

const anyValue = fc.oneof(
  fc.string(),
  fc.integer().map(String),
  fc.integer({ min: 0, max: 3700 }).map(String),
  fc.integer({ min: SERVER_TIME - 400_000, max: SERVER_TIME + 400_000 }).map(String),
  anyFirmwareVersion,
  fc.constantFrom('open', 'closed', '/api/v1/audit', '1e99', '[]', ''),
);

/** Whatever a device may send: for each known parameter, nothing, junk or a plausible value. */
const anyDeviceParameters: fc.Arbitrary<DeviceParameters> = fc.record(
  Object.fromEntries(REPORTED_PARAMETERS.map((name) => [name, fc.option(anyValue, { nil: undefined })])),
);

forEachDatabase('config convergence on a real app', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind);
    for (const [kind, versions] of Object.entries(CATALOG)) {
      for (const version of versions) await addRelease(t.db, kind as keyof typeof CATALOG, version, { fleetLatest: true });
    }
  });
  after(() => t.close());

  test('whatever a device reports, applying each correction (lists digested by the device itself) converges to {} within 13 polls', async () => {
    await fc.assert(
      fc.asyncProperty(anyOkmSettings, anyDeviceParameters, async (settings, initial) => {
        const serial = newSerial();
        await insertOkm(t.db, serial, null, settings, SERVER_TIME);
        let parameters = initial;
        for (let polls = 1; polls <= 13; polls++) {
          const response = await poll(t, serial, parameters);
          assert.equal(response.statusCode, 200);
          const correction = response.json() as Record<string, unknown>;
          if (Object.keys(correction).length === 0) return;
          parameters = { ...parameters, ...(parametersAfter(correction) as DeviceParameters) };
        }
        assert.fail(`no convergence within 13 polls; last parameters ${JSON.stringify(parameters)}`);
      }),
      { numRuns: 60 },
    );
  });
});
