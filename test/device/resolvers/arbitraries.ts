import fc from 'fast-check';
import type { ReportedState } from '../../../src/device/reported.ts';
import type { DesiredState } from '../../../src/device/resolvers/types.ts';
import { canonicalDigest } from '../../../src/shared/canonical-json.ts';
import { desiredState, firmwareOffer, SERVER_TIME } from './fixtures.ts';

export const anyFirmwareVersion = fc.array(fc.nat({ max: 10_000 }), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
const list = fc.option(fc.array(fc.jsonValue(), { maxLength: 5 }), { nil: null }).map((items) =>
  items === null ? null : { digest: canonicalDigest(items), items },
);

/** Any valid desired state without pending messages. */
export const anyDesiredState: fc.Arbitrary<DesiredState> = fc
  .record({
    kas: fc.option(anyFirmwareVersion, { nil: null }),
    batchKey: fc.option(anyFirmwareVersion, { nil: null }),
    wirelessKey: fc.option(anyFirmwareVersion, { nil: null }),
    cacheMode: fc.constantFrom(null, 1 as const, 2 as const),
    keyCheckoutWindow: fc.option(fc.record({ time: fc.nat({ max: 86_400 }), contact: fc.constantFrom('open' as const, 'closed' as const) }), {
      nil: null,
    }),
    auditingEnabled: fc.boolean(),
    assetList: list,
    usersAssets: list,
    pollingInterval: fc.integer({ min: 5, max: 3600 }),
  })
  .map(({ kas, batchKey, wirelessKey, ...rest }) =>
    desiredState({
      ...rest,
      firmware: {
        kas: kas === null ? null : firmwareOffer(kas),
        batch_key: batchKey === null ? null : firmwareOffer(batchKey),
        wireless_key: wirelessKey === null ? null : firmwareOffer(wirelessKey),
      },
    }),
  );

const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
const anyInteger = fc.oneof(fc.integer(), fc.integer({ min: 0, max: 3700 }), fc.integer({ min: SERVER_TIME - 400_000, max: SERVER_TIME + 400_000 }));
const anyVersion = fc.oneof(fc.string(), anyFirmwareVersion);

/** Any state a device might report: missing, arbitrary or plausible values for every parameter. */
export const anyReportedState: fc.Arbitrary<ReportedState> = fc.record({
  kasFirmware: maybe(anyVersion),
  kasDateTime: maybe(anyInteger),
  retailCfg: maybe(anyInteger),
  configUrl: maybe(fc.string()),
  auditUrl: maybe(fc.oneof(fc.string(), fc.constant('/api/v1/audit'))),
  assetList: maybe(fc.string()),
  usersAssets: maybe(fc.string()),
  batchKeyFirmware: maybe(anyVersion),
  wirelessKeyFirmware: maybe(anyVersion),
  keyCheckoutWindowTime: maybe(anyInteger),
  keyCheckoutWindowContact: maybe(fc.oneof(fc.string(), fc.constantFrom('open', 'closed'))),
  installCode: maybe(fc.stringMatching(/^\d{5,20}$/)),
  cacheMode: maybe(anyInteger),
  pollingInterval: maybe(anyInteger),
});
