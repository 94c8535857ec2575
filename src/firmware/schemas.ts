import { Type, type Static } from 'typebox';
import { IsoTime } from '../http/schemas.ts';
import { FIRMWARE_KINDS, FIRMWARE_VERSION_PATTERN } from './version.ts';

const Kind = Type.Enum([...FIRMWARE_KINDS]);
const Version = Type.String({ pattern: FIRMWARE_VERSION_PATTERN, description: 'dotted numbers, 1–4 parts: 2.10.0' });

export const MAX_RELEASE_URL_LENGTH = 2048;

export const KindParams = Type.Object({ kind: Kind }, { additionalProperties: false });
export type KindParams = Static<typeof KindParams>;

export const ReleaseParams = Type.Object({ kind: Kind, version: Version }, { additionalProperties: false });
export type ReleaseParams = Static<typeof ReleaseParams>;

export const CatalogQuery = Type.Object({ kind: Type.Optional(Kind) }, { additionalProperties: false });
export type CatalogQuery = Static<typeof CatalogQuery>;

export const UrlReleaseBody = Type.Object(
  {
    kind: Kind,
    version: Version,
    url: Type.String({ format: 'uri', maxLength: MAX_RELEASE_URL_LENGTH, description: 'http or https URL devices download from' }),
    sha256: Type.String({ pattern: '^[0-9A-Fa-f]{64}$', description: 'SHA-256 of the file, 64 hex digits' }),
  },
  { additionalProperties: false },
);
export type UrlReleaseBody = Static<typeof UrlReleaseBody>;

export const LatestBody = Type.Object(
  { version: Type.Union([Version, Type.Null()], { description: 'a catalog release of the kind; null: no fleet-wide latest' }) },
  { additionalProperties: false },
);
export type LatestBody = Static<typeof LatestBody>;

export const ReleaseView = Type.Object({
  kind: Kind,
  version: Type.String(),
  source: Type.Enum(['url', 'file'], { description: 'an external URL, or a file uploaded to keyfleet' }),
  url: Type.String({ description: 'where devices download it' }),
  sha256: Type.String(),
  size: Type.Union([Type.Integer(), Type.Null()], { description: 'bytes; null for a URL release' }),
  created_at: IsoTime,
});
export type ReleaseView = Static<typeof ReleaseView>;

const VersionOrNull = Type.Union([Type.String(), Type.Null()]);
export const LatestVersions = Type.Object({ kas: VersionOrNull, batch_key: VersionOrNull, wireless_key: VersionOrNull });
export type LatestVersions = Static<typeof LatestVersions>;

export const CatalogResponse = Type.Object({ message: Type.String(), data: Type.Array(ReleaseView), latest: LatestVersions });

export const LatestView = Type.Object({ kind: Kind, version: VersionOrNull });
export type LatestView = Static<typeof LatestView>;


export const LatestPreviewQuery = Type.Object(
  { version: Type.Optional(Version) },
  { additionalProperties: false, description: 'version: the release that would become the fleet latest; absent: the fleet latest would be cleared' },
);
export type LatestPreviewQuery = Static<typeof LatestPreviewQuery>;

export const LatestPreview = Type.Object({
  kind: Kind,
  current: VersionOrNull,
  version: Type.Union([Type.String(), Type.Null()], { description: 'the fleet latest after the change; null: cleared' }),
  okms: Type.Integer({ description: 'OKMs of every customer that follow the fleet latest of this kind (no pin of it): the change applies to each' }),
  offered: Type.Integer({
    description: 'of those, OKMs that do not report `version`, offered it at their next poll; for a clear, those that do not report the current latest, no longer offered it',
  }),
  pinned: Type.Integer({ description: 'OKMs with a pin of this kind, which the change leaves as they are' }),
});
export type LatestPreview = Static<typeof LatestPreview>;
