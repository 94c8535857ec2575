import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { recordChange, type Change, type ChangeSource } from '../audit/trail.ts';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import { HttpError, badRequest, conflict, notFound } from '../http/errors.ts';
import { checkIfMatch, strongEtag, type IfMatch } from '../http/preconditions.ts';
import { isHttpUrl } from '../shared/http-url.ts';
import { parseRange, type ByteRange } from './byte-range.ts';
import {
  FIRMWARE_CHUNK_BYTES,
  clearFleetLatest,
  insertFleetLatestIfNone,
  countLatestFollowers,
  countPinningOkms,
  deleteRelease,
  fleetLatestVersion,
  insertChunk,
  insertRelease,
  listReleases,
  listVersions,
  lockFleetLatest,
  lockRelease,
  readChunk,
  setFleetLatest,
} from './catalog-repository.ts';
import { payloadTooLarge, spoolUpload } from './catalog-upload.ts';
import { downloadUrl, findRelease, fleetLatestReleases, type FirmwareRelease } from './repository.ts';
import type { LatestPreview, LatestVersions, LatestView, ReleaseView, UrlReleaseBody } from './schemas.ts';
import { FIRMWARE_KINDS, compareFirmwareVersions, parseFirmwareVersion, type FirmwareKind } from './version.ts';

type CatalogSettings = Pick<Settings, 'publicBaseUrl' | 'dataDir' | 'firmwareMaxBytes'>;

const RELEASE_NOT_FOUND = 'Firmware release not found';

const versionParts = (version: string) => parseFirmwareVersion(version) ?? [];

export function toReleaseView(release: FirmwareRelease, settings: CatalogSettings): ReleaseView {
  return {
    kind: release.kind,
    version: release.version,
    source: release.url === null ? 'file' : 'url',
    url: downloadUrl(release, settings),
    sha256: release.sha256,
    size: release.size,
    created_at: new Date(release.createdAt).toISOString(),
  };
}

/** Releases by kind, newest version first, and the fleet-wide latest version of each kind. */
export async function listCatalog(
  db: Db,
  settings: CatalogSettings,
  kind: FirmwareKind | undefined,
): Promise<{ releases: ReleaseView[]; latest: LatestVersions }> {
  const [releases, latest] = await Promise.all([listReleases(db, kind), fleetLatestReleases(db)]);
  releases.sort(
    (a, b) =>
      FIRMWARE_KINDS.indexOf(a.kind) - FIRMWARE_KINDS.indexOf(b.kind) ||
      compareFirmwareVersions(versionParts(b.version), versionParts(a.version)),
  );
  return {
    releases: releases.map((release) => toReleaseView(release, settings)),
    latest: {
      kas: latest.kas?.version ?? null,
      batch_key: latest.batch_key?.version ?? null,
      wireless_key: latest.wireless_key?.version ?? null,
    },
  };
}

export async function getRelease(db: Db, settings: CatalogSettings, kind: FirmwareKind, version: string): Promise<ReleaseView> {
  const release = await findRelease(db, kind, version);
  if (!release) throw notFound(RELEASE_NOT_FOUND);
  return toReleaseView(release, settings);
}

/** A release as the audit trail records it (the catalog's fields, without the download URL made for files). */
const releaseAuditState = (release: FirmwareRelease) => ({
  kind: release.kind,
  version: release.version,
  source: release.url === null ? 'file' : 'url',
  ...(release.url === null ? {} : { url: release.url }),
  sha256: release.sha256,
  size: release.size,
});

const releaseChange = (action: 'firmware.added' | 'firmware.deleted', release: FirmwareRelease): Change => ({
  action,
  customer: null,
  entity: { type: 'firmware', id: `${release.kind}/${release.version}` },
  ...(action === 'firmware.added' ? { after: releaseAuditState(release) } : { before: releaseAuditState(release) }),
});

/** "2.1" and "2.1.0" are one version: the catalog holds at most one of them per kind. */
async function insertUniqueRelease(trx: Db, release: FirmwareRelease): Promise<void> {
  const wanted = versionParts(release.version);
  const equal = (await listVersions(trx, release.kind)).find((version) => compareFirmwareVersions(versionParts(version), wanted) === 0);
  if (equal !== undefined || !(await insertRelease(trx, release))) {
    throw conflict(`firmware ${release.kind} ${equal ?? release.version} already exists`);
  }
}

export async function addUrlRelease(db: Db, settings: CatalogSettings, source: ChangeSource, body: UrlReleaseBody, now: number): Promise<ReleaseView> {
  if (!isHttpUrl(body.url)) throw badRequest('url: must be an http or https URL');
  const release: FirmwareRelease = {
    kind: body.kind,
    version: body.version,
    url: body.url,
    sha256: body.sha256.toLowerCase(),
    size: null,
    createdAt: now,
  };
  await db.transaction().execute(async (trx) => {
    await insertUniqueRelease(trx, release);
    await recordChange(trx, source, releaseChange('firmware.added', release), now);
  });
  return toReleaseView(release, settings);
}

/** Stores an uploaded file as a release, in chunks of FIRMWARE_CHUNK_BYTES, with its audit entry; sha256 and size are computed. */
export async function addFileRelease(
  db: Db,
  settings: CatalogSettings,
  source: ChangeSource,
  kind: FirmwareKind,
  version: string,
  body: Readable,
  declaredLength: number | undefined,
  now: number,
): Promise<ReleaseView> {
  if (declaredLength !== undefined && declaredLength > settings.firmwareMaxBytes) throw payloadTooLarge(settings.firmwareMaxBytes);
  if (await findRelease(db, kind, version)) throw conflict(`firmware ${kind} ${version} already exists`);
  const spooled = await spoolUpload(body, path.join(settings.dataDir, 'uploads'), settings.firmwareMaxBytes);
  try {
    if (spooled.size === 0) throw badRequest('body: the firmware file is empty');
    const release: FirmwareRelease = { kind, version, url: null, sha256: spooled.sha256, size: spooled.size, createdAt: now };
    await db.transaction().execute(async (trx) => {
      await insertUniqueRelease(trx, release);
      const file = await fs.promises.open(spooled.path);
      try {
        for (let seq = 0; seq * FIRMWARE_CHUNK_BYTES < spooled.size; seq++) {
          const chunk = Buffer.alloc(Math.min(FIRMWARE_CHUNK_BYTES, spooled.size - seq * FIRMWARE_CHUNK_BYTES));
          await file.read(chunk, 0, chunk.length, seq * FIRMWARE_CHUNK_BYTES);
          await insertChunk(trx, kind, version, seq, chunk);
        }
      } finally {
        await file.close();
      }
      await recordChange(trx, source, releaseChange('firmware.added', release), now);
    });
    return toReleaseView(release, settings);
  } finally {
    await spooled.remove();
  }
}

/** Deletes a release unless it is the fleet-wide latest of its kind or an OKM pins it. */
export async function removeRelease(db: Db, source: ChangeSource, kind: FirmwareKind, version: string, now = Date.now()): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!(await lockRelease(trx, kind, version))) throw notFound(RELEASE_NOT_FOUND);
    if ((await fleetLatestVersion(trx, kind)) === version) {
      throw conflict(`firmware ${kind} ${version} is the fleet-wide latest release; set another one first`);
    }
    const pinning = await countPinningOkms(trx, kind, version);
    if (pinning > 0) throw conflict(`firmware ${kind} ${version} is pinned by ${pinning} OKM${pinning === 1 ? '' : 's'}`);
    const release = (await findRelease(trx, kind, version))!;
    await deleteRelease(trx, kind, version);
    await recordChange(trx, source, releaseChange('firmware.deleted', release), now);
  });
}

/** Sets (or with null, clears) the release that every OKM of the fleet without a pin is offered. */
/** The strong ETag of a kind's fleet latest (null: none), the version its preview answers with and a change names in If-Match (docs/adr/0100). */
export const fleetLatestEtag = (kind: FirmwareKind, version: string | null) => strongEtag(`fleet-latest\n${kind}\n${version ?? ''}`);

export async function setLatest(db: Db, source: ChangeSource, kind: FirmwareKind, version: string | null, now = Date.now(), ifMatch?: IfMatch): Promise<LatestView> {
  await db.transaction().execute(async (trx) => {
    if (version !== null && !(await lockRelease(trx, kind, version))) throw badRequest(`version: no ${kind} release ${version} in the firmware catalog`);
    const before = (await lockFleetLatest(trx, kind)) ?? null;
    // Under the fleet latest's lock: a change made since the confirmation's preview is a 412.
    checkIfMatch(ifMatch, fleetLatestEtag(kind, before), () => JSON.stringify({ kind, version: before }));
    if (version === null) await clearFleetLatest(trx, kind);
    else if (ifMatch !== undefined && before === null && !(await insertFleetLatestIfNone(trx, kind, version))) {
      // There was no row to lock: another change set a fleet latest since this one found none.
      const now = (await lockFleetLatest(trx, kind)) ?? null;
      checkIfMatch(ifMatch, fleetLatestEtag(kind, now), () => JSON.stringify({ kind, version: now }));
      await setFleetLatest(trx, kind, version);
    } else if (before !== null || ifMatch === undefined) await setFleetLatest(trx, kind, version);
    await recordChange(trx, source, { action: 'firmware.latest_set', customer: null, entity: { type: 'firmware', id: kind }, before: { version: before }, after: { version } }, now);
  });
  return { kind, version };
}

/**
 * What setting (or, with null, clearing) the fleet latest of a kind would reach, before it is
 * done: the console's confirmation names these counts. Read only; the counts are of the moment.
 */
export async function previewLatest(db: Db, kind: FirmwareKind, version: string | null): Promise<LatestPreview> {
  if (version !== null && !(await findRelease(db, kind, version))) throw badRequest(`version: no ${kind} release ${version} in the firmware catalog`);
  const current = (await fleetLatestVersion(db, kind)) ?? null;
  // Clearing stops the offer of the current latest to those not on it yet.
  const counts = await countLatestFollowers(db, kind, version ?? current);
  return { kind, current, version, ...counts };
}

export interface FileReply {
  statusCode: 200 | 206 | 304;
  headers: Record<string, string>;
  /** Opens the body stream; not called for HEAD, so that nothing is read from the database. */
  openBody?: () => Readable;
}

export interface DownloadConditions {
  range?: string;
  ifRange?: string;
  ifNoneMatch?: string;
}

async function* fileBytes(db: Db, kind: FirmwareKind, version: string, { start, end }: ByteRange): AsyncGenerator<Buffer> {
  for (let seq = Math.floor(start / FIRMWARE_CHUNK_BYTES); seq <= Math.floor(end / FIRMWARE_CHUNK_BYTES); seq++) {
    const chunk = await readChunk(db, kind, version, seq);
    // The release was deleted while it was being downloaded.
    if (!chunk) throw new Error(`firmware ${kind} ${version} chunk ${seq} is missing`);
    const chunkStart = seq * FIRMWARE_CHUNK_BYTES;
    yield chunk.subarray(Math.max(0, start - chunkStart), Math.min(chunk.length, end - chunkStart + 1));
  }
}

const matchesEtag = (header: string, etag: string) =>
  header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*');

/**
 * The reply to a device's download: the whole file, one byte range (206), 304 when its
 * copy is current, or a 416 error; the body is read from the database chunk by chunk.
 */
export async function openDownload(db: Db, kind: FirmwareKind, version: string, conditions: DownloadConditions): Promise<FileReply> {
  const release = await findRelease(db, kind, version);
  if (!release) throw notFound(RELEASE_NOT_FOUND);
  if (release.url !== null || release.size === null) {
    throw notFound(`Firmware ${kind} ${version} is not a file stored here; download it from ${release.url}`);
  }
  const size = release.size;
  const etag = `"${release.sha256}"`;
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream', etag, 'accept-ranges': 'bytes' };
  if (conditions.ifNoneMatch !== undefined && matchesEtag(conditions.ifNoneMatch, etag)) return { statusCode: 304, headers };

  const rangeApplies = conditions.ifRange === undefined || conditions.ifRange.trim() === etag;
  const request = parseRange(rangeApplies ? conditions.range : undefined, size);
  if (request.kind === 'unsatisfiable') {
    throw new HttpError(416, 'RANGE_NOT_SATISFIABLE', `Range ${conditions.range} is not satisfiable for a file of ${size} bytes`, {
      'content-range': `bytes */${size}`,
    });
  }
  const range = request.kind === 'partial' ? request.range : { start: 0, end: size - 1 };
  headers['content-length'] = String(range.end - range.start + 1);
  if (request.kind === 'partial') headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`;
  return {
    statusCode: request.kind === 'partial' ? 206 : 200,
    headers,
    openBody: () => Readable.from(fileBytes(db, kind, version, range)),
  };
}
