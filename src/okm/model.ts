import type { FirmwareKind } from '../firmware/version.ts';

export type CacheMode = 1 | 2;
export type CheckoutContact = 'open' | 'closed';

export interface KeyCheckoutWindow {
  time: number;
  contact: CheckoutContact;
}

/** What an operator configures for one OKM: its desired state. null means "not configured". */
export interface OkmSettings {
  cacheMode: CacheMode | null;
  keyCheckoutWindow: KeyCheckoutWindow | null;
  auditingEnabled: boolean;
  assetList: unknown[] | null;
  usersAssets: unknown[] | null;
  /**
   * usersAssets as the JSON text it was sent in, which is stored and shown (contract §16: as sent);
   * usersAssets is what it parses to, the value its digest is computed from. Absent: the text
   * JSON.stringify writes.
   */
  usersAssetsJson?: string;
  pollingInterval: number | null;
  /** Per-OKM firmware pins (catalog versions) that override the fleet-wide latest release. */
  firmware: Record<FirmwareKind, string | null>;
  statusUrls: string[];
}

/** The device's query parameters from its last poll, by the device's own names, as sent. */
export type ReportedValues = Record<string, string>;

export interface Okm extends OkmSettings {
  serialNumber: string;
  customerId: number | null;
  assetListDigest: string | null;
  usersAssetsDigest: string | null;
  reported: ReportedValues | null;
  installCode: string | null;
  lastSyncTime: number | null;
  lastIp: string | null;
  firmwareVersion: string | null;
  /** Reply key of the resolver that answered the last poll; null: in step, or never polled. */
  lastCorrection: string | null;
  deviceTokenIssuedAt: number | null;
  /** When the fleet pass found it silent; null: not marked; 0: never polled as an OKM (fleet-states.ts). */
  overdueAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * The polling interval an OKM is told to keep (the poll's pollingInterval) and is judged
 * overdue by, in seconds: its own, else the fleet's, always within 5–3600 whatever a row holds.
 */
export const effectivePollingInterval = (own: number | null, fleet: number): number => Math.min(3600, Math.max(5, own ?? fleet));

export const UNCONFIGURED_OKM: OkmSettings = {
  cacheMode: null,
  keyCheckoutWindow: null,
  auditingEnabled: false,
  assetList: null,
  usersAssets: null,
  pollingInterval: null,
  firmware: { kas: null, batch_key: null, wireless_key: null },
  statusUrls: [],
};
