/**
 * For each resolver of the drift report (contract §11), what the OKM's configuration asks for and
 * what the device last reported, as text for the side-by-side table. Pure: unit-tested.
 */
export interface ConfiguredOkm {
  cache_mode: number | null;
  key_checkout_window: { time: number; contact: string } | null;
  auditing_enabled: boolean;
  asset_list: string[] | null;
  users_assets: unknown[] | null;
  effective_polling_interval: number;
  polling_interval: number | null;
  firmware: { kas: string | null; batch_key: string | null; wireless_key: string | null };
  reported: Record<string, string> | null;
}

export interface ResolverValues {
  label: string;
  configured: string;
  reported: string;
  /** When what was reported is a time (the device clock): its ISO value, shown in the browser's zone. */
  reportedTime?: string;
}

const pinned = (version: string | null) => version ?? 'fleet latest';
const list = (items: unknown[] | null, noun: string) => (items === null ? 'not configured' : `${items.length} ${noun}`);

/** The device's kasDateTime (ms since the epoch) as an ISO time; undefined when it sent none or not a number. */
const deviceClock = (value: string | undefined) => (value !== undefined && /^\d{1,15}$/.test(value) ? new Date(Number(value)).toISOString() : undefined);

export function resolverValues(name: string, okm: ConfiguredOkm, pendingMessages: number): ResolverValues {
  const reported = okm.reported ?? {};
  const shown = (key: string) => reported[key] ?? '—';
  switch (name) {
    case 'message':
      return { label: 'Buffered message', configured: `${pendingMessages} waiting`, reported: '—' };
    case 'kasFirmware':
      return { label: 'KAS firmware', configured: pinned(okm.firmware.kas), reported: shown('kasFirmware') };
    case 'kasDateTime':
    {
      const time = deviceClock(reported.kasDateTime);
      return { label: 'Device clock', configured: 'server time ± 5 min', reported: reported.kasDateTime ?? '—', ...(time === undefined ? {} : { reportedTime: time }) };
    }
    case 'cacheMode':
      return { label: 'Cache mode', configured: okm.cache_mode === null ? 'not set (1)' : String(okm.cache_mode), reported: shown('cacheMode') };
    case 'keyCheckoutWindowTime':
      return {
        label: 'Key checkout window',
        configured: okm.key_checkout_window === null ? 'not configured' : `${okm.key_checkout_window.time} s, ${okm.key_checkout_window.contact}`,
        reported: reported.keyCheckoutWindowTime === undefined && reported.keyCheckoutWindowContact === undefined ? '—' : `${shown('keyCheckoutWindowTime')} s, ${shown('keyCheckoutWindowContact')}`,
      };
    case 'retailCfg':
      return { label: 'Auditing (retailCfg)', configured: okm.auditing_enabled ? 'on (2)' : 'off', reported: shown('retailCfg') };
    case 'assetList':
      return { label: 'Asset list', configured: list(okm.asset_list, 'locks'), reported: shortDigest(reported.assetListDigest) };
    case 'usersAssets':
      return { label: 'Users’ assets', configured: list(okm.users_assets, 'users'), reported: shortDigest(reported.usersAssetsDigest) };
    case 'auditUrl':
      return { label: 'Audit URL', configured: 'this server’s AUDIT_URL', reported: shown('auditUrl') };
    case 'pollingInterval':
      return {
        label: 'Polling interval',
        configured: `${okm.effective_polling_interval} s${okm.polling_interval === null ? ' (fleet default)' : ''}`,
        reported: reported.pollingInterval === undefined ? '—' : `${reported.pollingInterval} s`,
      };
    case 'batchKeyFirmware':
      return { label: 'Batch key firmware', configured: pinned(okm.firmware.batch_key), reported: shown('batchKeyFirmware') };
    case 'wirelessKeyFirmware':
      return { label: 'Wireless key firmware', configured: pinned(okm.firmware.wireless_key), reported: shown('wirelessKeyFirmware') };
    default:
      return { label: name, configured: '—', reported: shown(name) };
  }
}

function shortDigest(digest: string | undefined): string {
  return digest === undefined ? '—' : `digest ${digest.slice(0, 12)}…`;
}
