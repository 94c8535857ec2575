/**
 * The OKM configuration form: its text fields from an OKM record, and the RFC 7396 merge patch
 * that takes the record to what the form says (only what changed; null unsets). Pure: unit-tested.
 */
export interface OkmConfiguration {
  polling_interval: number | null;
  cache_mode: 1 | 2 | null;
  key_checkout_window: { time: number; contact: 'open' | 'closed' } | null;
  auditing_enabled: boolean;
  asset_list: string[] | null;
  firmware: { kas: string | null; batch_key: string | null; wireless_key: string | null };
  subscribe_urls: { status: string[] };
}

/** What the form's controls hold: text as typed, so that a wrong value reaches the API and its message. */
export interface OkmForm {
  polling_interval: string;
  cache_mode: '' | '1' | '2';
  key_checkout_window_time: string;
  key_checkout_window_contact: '' | 'open' | 'closed';
  auditing_enabled: boolean;
  asset_list: string;
  firmware_kas: string;
  firmware_batch_key: string;
  firmware_wireless_key: string;
  status_urls: string;
}

export function formFromRecord(okm: OkmConfiguration): OkmForm {
  return {
    polling_interval: okm.polling_interval === null ? '' : String(okm.polling_interval),
    cache_mode: okm.cache_mode === null ? '' : (String(okm.cache_mode) as '1' | '2'),
    key_checkout_window_time: okm.key_checkout_window === null ? '' : String(okm.key_checkout_window.time),
    key_checkout_window_contact: okm.key_checkout_window?.contact ?? '',
    auditing_enabled: okm.auditing_enabled,
    asset_list: (okm.asset_list ?? []).join('\n'),
    firmware_kas: okm.firmware.kas ?? '',
    firmware_batch_key: okm.firmware.batch_key ?? '',
    firmware_wireless_key: okm.firmware.wireless_key ?? '',
    status_urls: okm.subscribe_urls.status.join('\n'),
  };
}

/** A number as typed: an integer when it is one, else the text itself (for the API to refuse by name). */
function numberOrText(text: string): number | string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  return /^-?\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

const lines = (text: string) => text.split('\n').map((line) => line.trim()).filter((line) => line !== '');
const orNull = (text: string) => (text.trim() === '' ? null : text.trim());
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The merge patch from `okm` to `form`; {} when nothing changed. */
export function patchFromForm(okm: OkmConfiguration, form: OkmForm): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  const polling = numberOrText(form.polling_interval);
  if (!same(polling, okm.polling_interval)) patch.polling_interval = polling;
  const cacheMode = form.cache_mode === '' ? null : Number(form.cache_mode);
  if (cacheMode !== okm.cache_mode) patch.cache_mode = cacheMode;
  const window =
    form.key_checkout_window_time.trim() === '' && form.key_checkout_window_contact === ''
      ? null
      : { time: numberOrText(form.key_checkout_window_time), contact: form.key_checkout_window_contact === '' ? null : form.key_checkout_window_contact };
  if (!same(window, okm.key_checkout_window)) patch.key_checkout_window = window;
  if (form.auditing_enabled !== okm.auditing_enabled) patch.auditing_enabled = form.auditing_enabled;
  const assets = lines(form.asset_list);
  const assetList = assets.length === 0 && okm.asset_list === null ? null : assets;
  if (!same(assetList, okm.asset_list)) patch.asset_list = assetList;
  const firmware: Record<string, string | null> = {};
  for (const [kind, text] of [['kas', form.firmware_kas], ['batch_key', form.firmware_batch_key], ['wireless_key', form.firmware_wireless_key]] as const) {
    if (orNull(text) !== okm.firmware[kind]) firmware[kind] = orNull(text);
  }
  if (Object.keys(firmware).length > 0) patch.firmware = firmware;
  const urls = lines(form.status_urls);
  if (!same(urls, okm.subscribe_urls.status)) patch.subscribe_urls = { status: urls };
  return patch;
}

/** How the form names its fields to a person, in the form's order. */
export const FIELD_LABELS: Record<keyof OkmForm, string> = {
  polling_interval: 'polling interval',
  cache_mode: 'cache mode',
  key_checkout_window_time: 'key checkout window',
  key_checkout_window_contact: 'window contact',
  firmware_kas: 'KAS firmware pin',
  firmware_batch_key: 'batch key firmware pin',
  firmware_wireless_key: 'wireless key firmware pin',
  auditing_enabled: 'auditing',
  asset_list: 'asset list',
  status_urls: 'subscriber URLs',
};

/** The form fields whose values differ between two records, by their labels; [] when none. */
export function changedFields(before: OkmConfiguration, after: OkmConfiguration): string[] {
  const [a, b] = [formFromRecord(before), formFromRecord(after)];
  return (Object.keys(FIELD_LABELS) as (keyof OkmForm)[]).filter((key) => a[key] !== b[key]).map((key) => FIELD_LABELS[key]);
}
