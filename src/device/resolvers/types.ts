import type { FirmwareKind } from '../../firmware/version.ts';
import type { CacheMode, KeyCheckoutWindow } from '../../okm/model.ts';
import type { ReportedState } from '../reported.ts';

export interface PendingMessage {
  id: number;
  type: string;
  payload: unknown;
}

/** The effective release of one firmware kind, as a device is told to fetch it. */
export interface FirmwareOffer {
  version: string;
  /** The version parsed once, for comparison with what devices report. */
  parts: readonly number[];
  url: string;
  sha256: string;
}

/**
 * A configured list whose items stay in the database until a correction carries them:
 * lists can be large, and most polls only compare digests. The poll service swaps it for
 * the stored items.
 */
export class StoredList {
  constructor(readonly column: 'asset_list' | 'users_assets') {}
}

export interface ConfiguredList {
  /** Lowercase hex SHA-256 of the list's canonical JSON, computed when the list was written. */
  digest: string;
  items: readonly unknown[] | StoredList;
}

/** Everything the resolvers compare the device with, already reduced to effective values. */
export interface DesiredState {
  /** Server time of this poll, epoch ms: what the device clock should read. */
  serverTime: number;
  pendingMessage: PendingMessage | null;
  firmware: Record<FirmwareKind, FirmwareOffer | null>;
  cacheMode: CacheMode | null;
  keyCheckoutWindow: KeyCheckoutWindow | null;
  auditingEnabled: boolean;
  assetList: ConfiguredList | null;
  usersAssets: ConfiguredList | null;
  auditUrl: string;
  /** The OKM's own interval, else the fleet default. */
  pollingInterval: number;
}

/** A reply body that corrects the device, keyed by the device's own parameter names. */
export type Correction = Readonly<Record<string, unknown>>;

export type Resolver = (desired: DesiredState, reported: ReportedState) => Correction | undefined;
