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

/** The seed's resolvers 2–13, in its order (1, "OKM existence", is the poll service's insert). */
export const RESOLVERS: readonly Resolver[] = [
  bufferedMessage,
  kasFirmware,
  dateTime,
  cacheMode,
  keyCheckoutWindow,
  retailConfig,
  assetList,
  usersAssets,
  auditUrl,
  pollingInterval,
  batchKeyFirmware,
  wirelessKeyFirmware,
];

/** The first resolver's correction, or undefined when the device matches the desired state. */
export function resolve(desired: DesiredState, reported: ReportedState): Correction | undefined {
  for (const resolver of RESOLVERS) {
    const correction = resolver(desired, reported);
    if (correction) return correction;
  }
  return undefined;
}
