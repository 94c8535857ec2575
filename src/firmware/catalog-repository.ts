import type { Db } from '../db/database.ts';
import { toRelease, type FirmwareRelease } from './repository.ts';
import type { FirmwareKind } from './version.ts';

/** Uploaded files are stored in rows of this many bytes (the last one may be shorter). */
export const FIRMWARE_CHUNK_BYTES = 1024 * 1024;

/** The okms column that pins a release of each kind. */
export const PIN_COLUMNS = {
  kas: 'kas_firmware',
  batch_key: 'batch_key_firmware',
  wireless_key: 'wireless_key_firmware',
} as const satisfies Record<FirmwareKind, string>;

export async function listReleases(db: Db, kind?: FirmwareKind): Promise<FirmwareRelease[]> {
  let query = db.selectFrom('firmware_releases').selectAll();
  if (kind !== undefined) query = query.where('kind', '=', kind);
  return (await query.execute()).map(toRelease);
}

export async function listVersions(db: Db, kind: FirmwareKind): Promise<string[]> {
  const rows = await db.selectFrom('firmware_releases').select('version').where('kind', '=', kind).execute();
  return rows.map((row) => row.version);
}

/** Inserts a release row; false when (kind, version) is already taken. */
export async function insertRelease(db: Db, release: FirmwareRelease): Promise<boolean> {
  const result = await db
    .insertInto('firmware_releases')
    .values({
      kind: release.kind,
      version: release.version,
      url: release.url,
      sha256: release.sha256,
      size: release.size,
      created_at: release.createdAt,
    })
    .onConflict((oc) => oc.columns(['kind', 'version']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function insertChunk(db: Db, kind: FirmwareKind, version: string, seq: number, data: Buffer): Promise<void> {
  await db.insertInto('firmware_chunks').values({ kind, version, seq, data }).execute();
}

export async function readChunk(db: Db, kind: FirmwareKind, version: string, seq: number): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('firmware_chunks')
    .select('data')
    .where('kind', '=', kind)
    .where('version', '=', version)
    .where('seq', '=', seq)
    .executeTakeFirst();
  return row?.data;
}

/**
 * Takes the release's row lock for the rest of the transaction (a no-op update, portable to
 * every supported database). Pinning, making latest and deleting all take it first, so a
 * release cannot be deleted while another transaction starts to refer to it. False: no
 * such release.
 */
export async function lockRelease(db: Db, kind: FirmwareKind, version: string): Promise<boolean> {
  const result = await db
    .updateTable('firmware_releases')
    .set((eb) => ({ created_at: eb.ref('created_at') }))
    .where('kind', '=', kind)
    .where('version', '=', version)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes a release and, by cascade, its file chunks. */
export async function deleteRelease(db: Db, kind: FirmwareKind, version: string): Promise<void> {
  await db.deleteFrom('firmware_releases').where('kind', '=', kind).where('version', '=', version).execute();
}

export async function fleetLatestVersion(db: Db, kind: FirmwareKind): Promise<string | undefined> {
  const row = await db.selectFrom('fleet_firmware').select('version').where('kind', '=', kind).executeTakeFirst();
  return row?.version;
}

/**
 * The fleet-wide latest version of a kind, its row locked for the rest of the transaction (a
 * no-op update, as lockRelease), so that what a change records as before is what it replaced.
 */
export async function lockFleetLatest(db: Db, kind: FirmwareKind): Promise<string | undefined> {
  const row = await db
    .updateTable('fleet_firmware')
    .set((eb) => ({ version: eb.ref('version') }))
    .where('kind', '=', kind)
    .returning('version')
    .executeTakeFirst();
  return row?.version;
}

export async function setFleetLatest(db: Db, kind: FirmwareKind, version: string): Promise<void> {
  await db
    .insertInto('fleet_firmware')
    .values({ kind, version })
    .onConflict((oc) => oc.column('kind').doUpdateSet({ version }))
    .execute();
}

/**
 * Sets the fleet latest of a kind that has none; false when a row is there (a concurrent insert
 * waits for the other transaction, then finds it): what a conditional change checks against, as
 * there is no row to lock while a kind has no fleet latest.
 */
export async function insertFleetLatestIfNone(db: Db, kind: FirmwareKind, version: string): Promise<boolean> {
  const result = await db.insertInto('fleet_firmware').values({ kind, version }).onConflict((oc) => oc.column('kind').doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function clearFleetLatest(db: Db, kind: FirmwareKind): Promise<void> {
  await db.deleteFrom('fleet_firmware').where('kind', '=', kind).execute();
}

export async function countPinningOkms(db: Db, kind: FirmwareKind, version: string): Promise<number> {
  const row = await db
    .selectFrom('okms')
    .select((eb) => eb.fn.countAll<number | string>().as('pinning'))
    .where(PIN_COLUMNS[kind], '=', version)
    .executeTakeFirstOrThrow();
  return Number(row.pinning);
}

/** The okms column with the version of each kind the OKM reported at its last poll. */
const REPORTED_COLUMNS = {
  kas: 'firmware_version',
  batch_key: 'batch_key_firmware_version',
  wireless_key: 'wireless_key_firmware_version',
} as const satisfies Record<FirmwareKind, string>;

/**
 * What a change of the fleet latest of a kind reaches, over the whole fleet in one pass: the
 * OKMs without a pin of the kind (they follow the fleet latest), those of them that do not
 * report `target` (null: nothing is offered to them then), and the pinned ones.
 */
export async function countLatestFollowers(db: Db, kind: FirmwareKind, target: string | null): Promise<{ okms: number; offered: number; pinned: number }> {
  const pin = PIN_COLUMNS[kind];
  const reported = REPORTED_COLUMNS[kind];
  const row = await db
    .selectFrom('okms')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('total'),
      eb.fn.count<number | string>(pin).as('pinned'),
      eb.fn
        .sum<number | string | null>(
          eb
            .case()
            .when(eb.and([eb(pin, 'is', null), target === null ? eb.lit(false) : eb.or([eb(reported, 'is', null), eb(reported, '!=', target)])]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('offered'),
    ])
    .executeTakeFirstOrThrow();
  const total = Number(row.total);
  const pinned = Number(row.pinned);
  return { okms: total - pinned, offered: Number(row.offered ?? 0), pinned };
}
