/** The firmware page's table, pure (unit-tested under Node): catalog releases and the versions OKMs run, one row per version. */

export interface CatalogRelease {
  version: string;
  source: 'url' | 'file';
  url: string;
  sha256: string;
  size: number | null;
  created_at: string;
}

export interface FirmwareRow {
  version: string;
  /** null: OKMs report this version, but the catalog has no such release. */
  release: CatalogRelease | null;
  /** OKMs whose last poll reported this version. */
  okms: number;
  isLatest: boolean;
}

/** Newest first: dotted numbers compared part by part as numbers; text that is not such a version after them, in text order. */
export function compareVersionsNewestFirst(a: string, b: string): number {
  const numeric = (version: string) => (/^\d+(\.\d+)*$/.test(version) ? version.split('.').map(Number) : null);
  const left = numeric(a);
  const right = numeric(b);
  if (left === null || right === null) {
    if (left !== right) return left === null ? 1 : -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (right[index] ?? 0) - (left[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return right.length - left.length;
}

/** One row per version that is in the catalog or that some OKM runs, newest first. */
export function firmwareRows(releases: readonly CatalogRelease[], running: readonly { version: string; okms: number }[], latest: string | null): FirmwareRow[] {
  const rows = new Map<string, FirmwareRow>();
  for (const release of releases) rows.set(release.version, { version: release.version, release, okms: 0, isLatest: release.version === latest });
  for (const { version, okms } of running) {
    const row = rows.get(version) ?? { version, release: null, okms: 0, isLatest: version === latest };
    rows.set(version, { ...row, okms: row.okms + okms });
  }
  return [...rows.values()].sort((a, b) => compareVersionsNewestFirst(a.version, b.version));
}

/** "1.2 MB", "830 KB", "512 bytes". */
export function byteSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
