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
  /** A firmware offer: the retry policy may hold it back after offers the OKM did not take (contract §15). */
  retried?: true;
  /**
   * What the device is told, for telling one correction from another (stuck detection): the
   * whole correction unless said here. The clock's correction is the server time, new on
   * every poll, but it tells the device the same thing.
   */
  identity?: (correction: Correction) => string;
}

/** The resolvers 2–13 of contract §0.4, in seed order (1, "OKM existence", is the poll service's insert). */
export const RESOLVERS: readonly NamedResolver[] = [
  { name: 'message', resolve: bufferedMessage },
  { name: 'kasFirmware', resolve: kasFirmware, retried: true },
  { name: 'kasDateTime', resolve: dateTime, identity: () => 'kasDateTime' },
  { name: 'cacheMode', resolve: cacheMode },
  { name: 'keyCheckoutWindowTime', resolve: keyCheckoutWindow },
  { name: 'retailCfg', resolve: retailConfig },
  { name: 'assetList', resolve: assetList },
  { name: 'usersAssets', resolve: usersAssets },
  { name: 'auditUrl', resolve: auditUrl },
  { name: 'pollingInterval', resolve: pollingInterval },
  { name: 'batchKeyFirmware', resolve: batchKeyFirmware, retried: true },
  { name: 'wirelessKeyFirmware', resolve: wirelessKeyFirmware, retried: true },
];

/**
 * The first resolver's correction, or undefined when the device matches the desired state.
 * Resolvers named in `heldBack` are passed over (the retry policy's backoff).
 */
export function resolve(desired: DesiredState, reported: ReportedState, heldBack?: ReadonlySet<string>): Correction | undefined {
  for (const resolver of RESOLVERS) {
    if (heldBack?.has(resolver.name)) continue;
    const correction = resolver.resolve(desired, reported);
    if (correction) return correction;
  }
  return undefined;
}

/** Which resolver a correction comes from: its reply key (the first, e.g. keyCheckoutWindowTime); null for {}. */
export const correctionKey = (correction: Correction): string | null => Object.keys(correction)[0] ?? null;

const BY_NAME = new Map(RESOLVERS.map((resolver) => [resolver.name, resolver]));

/** The resolver of a reply key. */
export const resolverNamed = (name: string): NamedResolver | undefined => BY_NAME.get(name);
