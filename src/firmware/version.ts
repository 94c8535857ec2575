/** Firmware versions are dotted numbers of 1–4 parts: "2", "2.10", "2.10.0.1". */
export const FIRMWARE_VERSION_PATTERN = '^(0|[1-9][0-9]{0,8})(\\.(0|[1-9][0-9]{0,8})){0,3}$';
const VERSION = new RegExp(FIRMWARE_VERSION_PATTERN);

export function parseFirmwareVersion(text: string | undefined): number[] | undefined {
  if (text === undefined || !VERSION.test(text)) return undefined;
  return text.split('.').map(Number);
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
