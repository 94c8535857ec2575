/** The OKM list's filters as they stand in the console's URL and go to GET /api/v1/okms. Pure: unit-tested. */
export interface ListFilters {
  state?: 'in_step' | 'drifting' | 'overdue' | 'never_polled';
  serial_prefix?: string;
  firmware_version?: string;
  customer?: string;
  overdue?: boolean;
  unassigned?: boolean;
}

const STATES = ['in_step', 'drifting', 'overdue', 'never_polled'] as const;
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
  };
  return Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined)) as ListFilters;
}

/** "?state=drifting&customer=acme", or "" when no filter is set; in a fixed order, so that equal filters give equal strings. */
export function queryFromFilters(filters: ListFilters): string {
  const params = new URLSearchParams();
  for (const key of ['serial_prefix', 'state', 'overdue', 'firmware_version', 'customer', 'unassigned'] as const) {
    const value = filters[key];
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
