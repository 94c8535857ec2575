import type { ReportedState } from '../reported.ts';
import { assetList } from './asset-list.ts';
import { auditUrl } from './audit-url.ts';
import { batchKeyFirmware } from './batch-key-firmware.ts';
import { bufferedMessage } from './buffered-message.ts';
import { cacheMode } from './cache-mode.ts';
import { dateTime } from './date-time.ts';
import { kasFirmware } from './kas-firmware.ts';
import { keyCheckoutWindow } from './key-checkout-window.ts';
import { pollingInterval } from './polling-interval.ts';
import { retailConfig } from './retail-config.ts';
import { usersAssets } from './users-assets.ts';
import { wirelessKeyFirmware } from './wireless-key-firmware.ts';
import type { Correction, DesiredState, Resolver } from './types.ts';

export interface NamedResolver {
  /** The reply key of its corrections, which also names it in last_correction and the drift report. */
  name: string;
  resolve: Resolver;
}

/** The seed's resolvers 2–13, in its order (1, "OKM existence", is the poll service's insert). */
export const RESOLVERS: readonly NamedResolver[] = [
  { name: 'message', resolve: bufferedMessage },
  { name: 'kasFirmware', resolve: kasFirmware },
  { name: 'kasDateTime', resolve: dateTime },
  { name: 'cacheMode', resolve: cacheMode },
  { name: 'keyCheckoutWindowTime', resolve: keyCheckoutWindow },
  { name: 'retailCfg', resolve: retailConfig },
  { name: 'assetList', resolve: assetList },
  { name: 'usersAssets', resolve: usersAssets },
  { name: 'auditUrl', resolve: auditUrl },
  { name: 'pollingInterval', resolve: pollingInterval },
  { name: 'batchKeyFirmware', resolve: batchKeyFirmware },
  { name: 'wirelessKeyFirmware', resolve: wirelessKeyFirmware },
];

/** The first resolver's correction, or undefined when the device matches the desired state. */
export function resolve(desired: DesiredState, reported: ReportedState): Correction | undefined {
  for (const resolver of RESOLVERS) {
    const correction = resolver.resolve(desired, reported);
    if (correction) return correction;
  }
  return undefined;
}

/** Which resolver a correction comes from: its reply key (the first, e.g. keyCheckoutWindowTime); null for {}. */
export const correctionKey = (correction: Correction): string | null => Object.keys(correction)[0] ?? null;
