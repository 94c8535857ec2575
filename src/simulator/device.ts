/**
 * The device model of the original requirements (contract §0.4): what an OKM does with each reply of its config poll. Written
 * apart from the server's code on purpose (its own list digest, its own reading of a
 * correction), so that a server that answers something a device cannot act on never
 * converges, in the tests and in `keyfleet simulate` alike.
 */
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import type { ReportedState } from '../device/reported.ts';
import type { Correction } from '../device/resolvers/types.ts';

export const FIRMWARE_PARAMETERS = ['kasFirmware', 'batchKeyFirmware', 'wirelessKeyFirmware'] as const;
export type FirmwareParameter = (typeof FIRMWARE_PARAMETERS)[number];
const FIRMWARE = new Set<string>(FIRMWARE_PARAMETERS);
const LISTS = new Set(['assetList', 'usersAssets']);

/** A firmware offer as a correction carries it. */
export interface FirmwareOfferReply {
  version: string;
  url: string;
  sha256: string;
}

// A CommonJS module whose types declare an ES default export; at run time the import is the function.
const canonicalize = canonicalizeModule as unknown as (value: unknown) => string;

/**
 * The digest a device computes of a list it stored, on its own (not keyfleet's code): SHA-256
 * of the RFC 8785 text, lowercase hex. A server sending another digest never converges.
 */
export const deviceListDigest = (items: unknown): string => createHash('sha256').update(canonicalize(items), 'utf8').digest('hex');

/**
 * What a device does with a correction, as parameter name → new reported value: it installs
 * offered firmware, stores a list and reports the digest it computes of it, and takes every
 * other value as is. A message changes no parameter.
 */
export function parametersAfter(correction: Correction): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(correction)) {
    if (name === 'message' || name.endsWith('Digest')) continue;
    if (FIRMWARE.has(name)) changes[name] = (value as FirmwareOfferReply).version;
    else if (LISTS.has(name)) changes[name] = deviceListDigest(value);
    else changes[name] = value;
  }
  return changes;
}

export const applyCorrection = (reported: ReportedState, correction: Correction): ReportedState => ({
  ...reported,
  ...parametersAfter(correction),
});

/** The firmware offers of a correction, by parameter (a reply carries one, but nothing forbids more). */
export function firmwareOffers(correction: Correction): [FirmwareParameter, FirmwareOfferReply][] {
  return FIRMWARE_PARAMETERS.filter((name) => isOffer(correction[name])).map((name) => [name, correction[name] as FirmwareOfferReply]);
}

const isOffer = (value: unknown): value is FirmwareOfferReply =>
  typeof value === 'object' && value !== null && typeof (value as FirmwareOfferReply).version === 'string' && typeof (value as FirmwareOfferReply).url === 'string';
