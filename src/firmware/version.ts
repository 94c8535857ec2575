/** Firmware versions are dotted numbers of 1–4 parts: "2", "2.10", "2.10.0.1". */
export const FIRMWARE_VERSION_PATTERN = '^(0|[1-9][0-9]{0,8})(\\.(0|[1-9][0-9]{0,8})){0,3}$';
const VERSION = new RegExp(FIRMWARE_VERSION_PATTERN);

/** Versions parsed so far: every poll parses the versions it reports and those it may be offered, nearly always the same few. */
const parsedVersions = new Map<string, readonly number[] | undefined>();
/** Bounds the memory a device reporting ever new versions can take; the cache starts over when full. */
const PARSED_VERSIONS_KEPT = 1024;
/** The longest text FIRMWARE_VERSION_PATTERN matches (four parts of nine digits): a longer one is no version, and is not kept. */
const LONGEST_VERSION = 4 * 9 + 3;

/** The parts of a dotted version, or undefined when `text` is not one; the array returned is shared and frozen. */
export function parseFirmwareVersion(text: string | undefined): readonly number[] | undefined {
  if (text === undefined || text.length > LONGEST_VERSION) return undefined;
  if (parsedVersions.has(text)) return parsedVersions.get(text);
  const parts = VERSION.test(text) ? Object.freeze(text.split('.').map(Number)) : undefined;
  if (parsedVersions.size >= PARSED_VERSIONS_KEPT) parsedVersions.clear();
  parsedVersions.set(text, parts);
  return parts;
}

/** Compares part by part, missing parts counting as 0: 2.10.0 > 2.9.9, and 2.1 = 2.1.0. */
export function compareFirmwareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

export const FIRMWARE_KINDS = ['kas', 'batch_key', 'wireless_key'] as const;
export type FirmwareKind = (typeof FIRMWARE_KINDS)[number];
