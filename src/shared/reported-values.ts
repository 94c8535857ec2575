import { parseQueryString } from './query-string.ts';

/** The parameters an OKM reports on each poll, in the order the reported values are kept. */
export const REPORTED_PARAMETERS = [
  'kasFirmware',
  'kasDateTime',
  'retailCfg',
  'configUrl',
  'auditUrl',
  'assetList',
  'usersAssets',
  'batchKeyFirmware',
  'wirelessKeyFirmware',
  'keyCheckoutWindowTime',
  'keyCheckoutWindowContact',
  'installCode',
  'cacheMode',
  'pollingInterval',
] as const;

export type ReportedParameter = (typeof REPORTED_PARAMETERS)[number];

/** Longest reported value kept; the values are for display, and a device has no reason to send more. */
export const REPORTED_VALUE_MAX_LENGTH = 256;

/**
 * Longest query a poll stores as sent (okm_polls.reported); a longer one is stored as the JSON of
 * its reported values. An OKM's report is about 450 characters.
 */
export const STORED_QUERY_MAX_LENGTH = 4096;

const bounded = (value: unknown): string | undefined => (typeof value === 'string' ? value.slice(0, REPORTED_VALUE_MAX_LENGTH) : undefined);

/**
 * The known parameters as sent, as JSON text: single values only, each cut to a bounded length,
 * in REPORTED_PARAMETERS' order. One object literal of fixed shape (JSON leaves out the
 * parameters not sent, which are undefined) rather than an object built key by key, whose
 * stores and the query's reads by a variable name V8 could only do by generic lookups.
 */
export function reportedValuesJson(query: Record<string, unknown>): string {
  return JSON.stringify({
    kasFirmware: bounded(query.kasFirmware),
    kasDateTime: bounded(query.kasDateTime),
    retailCfg: bounded(query.retailCfg),
    configUrl: bounded(query.configUrl),
    auditUrl: bounded(query.auditUrl),
    assetList: bounded(query.assetList),
    usersAssets: bounded(query.usersAssets),
    batchKeyFirmware: bounded(query.batchKeyFirmware),
    wirelessKeyFirmware: bounded(query.wirelessKeyFirmware),
    keyCheckoutWindowTime: bounded(query.keyCheckoutWindowTime),
    keyCheckoutWindowContact: bounded(query.keyCheckoutWindowContact),
    installCode: bounded(query.installCode),
    cacheMode: bounded(query.cacheMode),
    pollingInterval: bounded(query.pollingInterval),
  } satisfies Record<ReportedParameter, string | undefined>);
}

/** Marks a stored report that is the query as sent; a report stored as JSON begins with '{'. */
const QUERY_MARK = '?';

/**
 * The query of a request's URL as the router cuts it (after the first '?' or '#'; find-my-way's
 * rule, which a test holds it to), beginning with QUERY_MARK: a poll's report as stored.
 */
export function reportedQueryOf(url: string): string {
  const question = url.indexOf('?', 1);
  const hash = url.indexOf('#', 1);
  if (hash !== -1 && (question === -1 || hash < question)) return QUERY_MARK + url.slice(hash + 1);
  return question === -1 ? QUERY_MARK : url.slice(question);
}

const sent = (value: unknown) => (value === undefined ? 0 : 1);

/**
 * Whether every parameter of the query is one an OKM reports: then storing the query as sent
 * stores nothing the reported values leave out, such as a token a client put in its URL by
 * mistake. Each parameter read by name: a loop over the names would read them by a variable key.
 */
function onlyReportedParameters(query: Record<string, unknown>): boolean {
  const reported =
    sent(query.kasFirmware) +
    sent(query.kasDateTime) +
    sent(query.retailCfg) +
    sent(query.configUrl) +
    sent(query.auditUrl) +
    sent(query.assetList) +
    sent(query.usersAssets) +
    sent(query.batchKeyFirmware) +
    sent(query.wirelessKeyFirmware) +
    sent(query.keyCheckoutWindowTime) +
    sent(query.keyCheckoutWindowContact) +
    sent(query.installCode) +
    sent(query.cacheMode) +
    sent(query.pollingInterval);
  return reported === Object.keys(query).length;
}

/**
 * What a poll stores of its report (okm_polls.reported): the query as sent (reportedQueryOf)
 * when it holds only reported parameters and is at most STORED_QUERY_MAX_LENGTH long, else the
 * JSON of its reported values. Either reads back (storedReportValues) to the same values. Every
 * poll stores one: the values are derived when someone reads them, not on the poll's path,
 * where their JSON cost about 1 µs a poll (docs/adr/0117).
 */
export function storedReport(reportedQuery: string, query: Record<string, unknown>): string {
  return reportedQuery.length <= STORED_QUERY_MAX_LENGTH && onlyReportedParameters(query) ? reportedQuery : reportedValuesJson(query);
}

/** The reported values of a stored report: the known parameters sent once, each cut to REPORTED_VALUE_MAX_LENGTH, in order. */
export function storedReportValues(stored: string): Partial<Record<ReportedParameter, string>> {
  // The query is parsed as the router parsed it for the poll: by the same parser, from the same text.
  const json = stored.startsWith(QUERY_MARK) ? reportedValuesJson(parseQueryString(stored.slice(QUERY_MARK.length))) : stored;
  return JSON.parse(json) as Partial<Record<ReportedParameter, string>>;
}
