import { compareFirmwareVersions, parseFirmwareVersion } from '../../firmware/version.ts';
import type { FirmwareOffer } from './types.ts';

/** The offer when it is newer than the reported version; an unparsable or missing version is never up to date. */
export function newerFirmware(offer: FirmwareOffer | null, reportedVersion: string | undefined) {
  // Most polls report the version offered: the same text is the same version.
  if (!offer || reportedVersion === offer.version) return undefined;
  const reported = parseFirmwareVersion(reportedVersion);
  if (reported && compareFirmwareVersions(offer.parts, reported) <= 0) return undefined;
  return { version: offer.version, url: offer.url, sha256: offer.sha256 };
}
