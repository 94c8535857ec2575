import { parseFirmwareVersion } from '../../../src/firmware/version.ts';
import type { ReportedState } from '../../../src/device/reported.ts';
import type { DesiredState, FirmwareOffer } from '../../../src/device/resolvers/types.ts';

/** The reply key that names each resolver, in seed order (contract §0.4): written out, not read from the code. */
export const SEED_ORDER = [
  'message',
  'kasFirmware',
  'kasDateTime',
  'cacheMode',
  'keyCheckoutWindowTime',
  'retailCfg',
  'assetList',
  'usersAssets',
  'auditUrl',
  'pollingInterval',
  'batchKeyFirmware',
  'wirelessKeyFirmware',
];

export const SERVER_TIME = Date.UTC(2025, 0, 15, 12, 0, 0);

export function firmwareOffer(version: string): FirmwareOffer {
  return { version, parts: parseFirmwareVersion(version)!, url: `https://firmware.example/${version}.bin`, sha256: 'ab'.repeat(32) };
}

/** An OKM with nothing configured and no firmware known: only date-time, cache mode, audit URL and polling interval apply. */
export function desiredState(overrides: Partial<DesiredState> = {}): DesiredState {
  return {
    serverTime: SERVER_TIME,
    pendingMessage: null,
    firmware: { kas: null, batch_key: null, wireless_key: null },
    cacheMode: null,
    keyCheckoutWindow: null,
    auditingEnabled: false,
    assetList: null,
    usersAssets: null,
    auditUrl: '/api/v1/audit',
    pollingInterval: 150,
    ...overrides,
  };
}

/** What a device in step with the desired state reports. */
export function reportInSync(desired: DesiredState, overrides: Partial<ReportedState> = {}): ReportedState {
  return {
    kasFirmware: desired.firmware.kas?.version ?? '1.0',
    kasDateTime: desired.serverTime,
    retailCfg: desired.auditingEnabled ? 2 : 1,
    configUrl: '/api/v1/config',
    auditUrl: desired.auditUrl,
    assetList: desired.assetList?.digest,
    usersAssets: desired.usersAssets?.digest,
    batchKeyFirmware: desired.firmware.batch_key?.version ?? '1.0',
    wirelessKeyFirmware: desired.firmware.wireless_key?.version ?? '1.0',
    keyCheckoutWindowTime: desired.keyCheckoutWindow?.time,
    keyCheckoutWindowContact: desired.keyCheckoutWindow?.contact,
    installCode: undefined,
    cacheMode: desired.cacheMode ?? 1,
    pollingInterval: desired.pollingInterval,
    ...overrides,
  };
}
