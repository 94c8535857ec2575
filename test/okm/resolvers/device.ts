import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import type { ReportedState } from '../../../src/okm/reported.ts';
import type { Correction } from '../../../src/okm/resolvers/types.ts';

const FIRMWARE_PARAMETERS = new Set(['kasFirmware', 'batchKeyFirmware', 'wirelessKeyFirmware']);
const LIST_PARAMETERS = new Set(['assetList', 'usersAssets']);

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
    if (FIRMWARE_PARAMETERS.has(name)) changes[name] = (value as { version: string }).version;
    else if (LIST_PARAMETERS.has(name)) changes[name] = deviceListDigest(value);
    else changes[name] = value;
  }
  return changes;
}

export const applyCorrection = (reported: ReportedState, correction: Correction): ReportedState => ({
  ...reported,
  ...parametersAfter(correction),
});
