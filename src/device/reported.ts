import type { ReportedParameter } from '../shared/reported-values.ts';

/**
 * What the device says about itself, read leniently from its query string: a parameter
 * that is missing, repeated or malformed is undefined ("unknown"), never an error, so that
 * the resolver for it sends the right value. A field for each reported parameter.
 */
export interface ReportedState extends Record<ReportedParameter, string | number | undefined> {
  kasFirmware: string | undefined;
  kasDateTime: number | undefined;
  retailCfg: number | undefined;
  configUrl: string | undefined;
  auditUrl: string | undefined;
  assetList: string | undefined;
  usersAssets: string | undefined;
  batchKeyFirmware: string | undefined;
  wirelessKeyFirmware: string | undefined;
  keyCheckoutWindowTime: number | undefined;
  keyCheckoutWindowContact: string | undefined;
  installCode: string | undefined;
  cacheMode: number | undefined;
  pollingInterval: number | undefined;
}

export const FIRMWARE_VERSION_MAX_LENGTH = 64;

const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** The most digits an integer parameter has: an epoch in milliseconds still fits a double exactly. */
const INTEGER_MAX_DIGITS = 15;
const INSTALL_CODE_DIGITS = { min: 5, max: 20 };

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * Whether `value` from `start` on is `min` to `max` decimal digits and nothing else. A loop
 * over the characters rather than a regular expression, which cost about 400 instructions a
 * test, six tests a poll.
 */
function digitsOnly(value: string, start: number, min: number, max: number): boolean {
  const digits = value.length - start;
  if (digits < min || digits > max) return false;
  for (let index = start; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code < ZERO || code > NINE) return false;
  }
  return true;
}

/** A plain decimal integer, /^-?[0-9]{1,15}$/: "1e99", "5.0", " 5" and "0x10" are unknown. */
function integer(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  return digitsOnly(value, value.charCodeAt(0) === MINUS ? 1 : 0, 1, INTEGER_MAX_DIGITS) ? Number(value) : undefined;
}

/** An installer code, /^[0-9]{5,20}$/. */
const installCodeOf = (value: unknown): string | undefined =>
  typeof value === 'string' && digitsOnly(value, 0, INSTALL_CODE_DIGITS.min, INSTALL_CODE_DIGITS.max) ? value : undefined;

/** Reads the device's parameters from a parsed query string (values are strings, or arrays when repeated). */
export function parseReported(query: Record<string, unknown>): ReportedState {
  return {
    kasFirmware: text(query.kasFirmware),
    kasDateTime: integer(query.kasDateTime),
    retailCfg: integer(query.retailCfg),
    configUrl: text(query.configUrl),
    auditUrl: text(query.auditUrl),
    assetList: text(query.assetList),
    usersAssets: text(query.usersAssets),
    batchKeyFirmware: text(query.batchKeyFirmware),
    wirelessKeyFirmware: text(query.wirelessKeyFirmware),
    keyCheckoutWindowTime: integer(query.keyCheckoutWindowTime),
    keyCheckoutWindowContact: text(query.keyCheckoutWindowContact),
    installCode: installCodeOf(query.installCode),
    cacheMode: integer(query.cacheMode),
    pollingInterval: integer(query.pollingInterval),
  };
}
