import type { Selectable } from 'kysely';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import type { FirmwareReleasesTable } from '../db/schema.ts';
import type { FirmwareKind } from './version.ts';

/** A catalog entry: either an external URL, or a file uploaded to keyfleet (url null). */
export interface FirmwareRelease {
  kind: FirmwareKind;
  version: string;
  url: string | null;
  sha256: string;
  size: number | null;
  createdAt: number;
}

export function toRelease(row: Selectable<FirmwareReleasesTable>): FirmwareRelease {
  return {
    kind: row.kind as FirmwareKind,
    version: row.version,
    url: row.url,
    sha256: row.sha256,
    size: row.size,
    createdAt: row.created_at,
  };
}

/** Where devices download a release: its own URL, or keyfleet's file route for an uploaded one. */
export function downloadUrl(release: FirmwareRelease, settings: Pick<Settings, 'publicBaseUrl'>): string {
  return release.url ?? `${settings.publicBaseUrl ?? ''}/api/v1/firmware/${release.kind}/${release.version}/file`;
}

export async function findRelease(db: Db, kind: FirmwareKind, version: string): Promise<FirmwareRelease | undefined> {
  const row = await db
    .selectFrom('firmware_releases')
    .selectAll()
    .where('kind', '=', kind)
    .where('version', '=', version)
    .executeTakeFirst();
  return row && toRelease(row);
}

/** The fleet-wide latest release of each kind that has one. */
export async function fleetLatestReleases(db: Db): Promise<Partial<Record<FirmwareKind, FirmwareRelease>>> {
  const rows = await db
    .selectFrom('fleet_firmware')
    .innerJoin('firmware_releases', (join) =>
      join.onRef('firmware_releases.kind', '=', 'fleet_firmware.kind').onRef('firmware_releases.version', '=', 'fleet_firmware.version'),
    )
    .selectAll('firmware_releases')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.kind, toRelease(row)]));
}
