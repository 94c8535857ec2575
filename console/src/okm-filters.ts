import type { OkmListFilters } from './api/client.ts';

/** A resolver's reply key: what last_correction holds, and the fleet summary's corrections count by. */
export type ReplyKey = NonNullable<OkmListFilters['last_correction']>;

/** Every reply key, in seed order (contract §0.4); a record, so that the compiler checks it against the API's list. */
const REPLY_KEY_ORDER: Record<ReplyKey, number> = {
  message: 0,
  kasFirmware: 1,
  kasDateTime: 2,
  cacheMode: 3,
  keyCheckoutWindowTime: 4,
  retailCfg: 5,
  assetList: 6,
  usersAssets: 7,
  auditUrl: 8,
  pollingInterval: 9,
  batchKeyFirmware: 10,
  wirelessKeyFirmware: 11,
};
export const REPLY_KEYS = (Object.keys(REPLY_KEY_ORDER) as ReplyKey[]).sort((a, b) => REPLY_KEY_ORDER[a] - REPLY_KEY_ORDER[b]);

/** The OKM list's filters as they stand in the console's URL and go to GET /api/v1/okms. Pure: unit-tested. */
export interface ListFilters {
  state?: (typeof STATES)[number];
  serial_prefix?: string;
  firmware_version?: string;
  customer?: string;
  overdue?: boolean;
  unassigned?: boolean;
  /** Only the OKMs whose last poll this resolver answered. */
  last_correction?: ReplyKey;
  /** Only the OKMs whose status events go to this URL. */
  subscriber_url?: string;
}

/** The API's states; a record, so that the compiler checks it against the API's list. */
const STATE_NAMES: Record<NonNullable<OkmListFilters['state']>, true> = { in_step: true, drifting: true, overdue: true, never_polled: true, stuck: true };
const STATES = Object.keys(STATE_NAMES) as (keyof typeof STATE_NAMES)[];
const oneOf = <T extends string>(values: readonly T[], value: string | undefined): T | undefined => (values as readonly string[]).includes(value ?? '') ? (value as T) : undefined;
const text = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());
const flag = (value: string | undefined) => (value === 'true' ? true : value === 'false' ? false : undefined);

/**
 * The filters of a console URL's query; what is not understood is left out, not sent to the
 * API (a bookmark's `sort` or `page` is dropped, since the list has neither, and its filters kept).
 */
export function filtersFromQuery(query: Record<string, string | undefined>): ListFilters {
  const filters: ListFilters = {
    state: oneOf(STATES, query.state),
    serial_prefix: text(query.serial_prefix),
    firmware_version: text(query.firmware_version),
    customer: text(query.customer),
    overdue: flag(query.overdue),
    unassigned: query.unassigned === 'true' ? true : undefined,
    last_correction: oneOf(REPLY_KEYS, query.last_correction),
    subscriber_url: text(query.subscriber_url),
  };
  return Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined)) as ListFilters;
}

/** "?state=drifting&customer=acme", or "" when no filter is set; in a fixed order, so that equal filters give equal strings. */
export function queryFromFilters(filters: ListFilters): string {
  const params = new URLSearchParams();
  for (const key of ['serial_prefix', 'state', 'last_correction', 'overdue', 'firmware_version', 'subscriber_url', 'customer', 'unassigned'] as const) {
    const value = filters[key];
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
