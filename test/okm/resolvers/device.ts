import type { ReportedState } from '../../../src/okm/reported.ts';
import type { Correction } from '../../../src/okm/resolvers/types.ts';

const FIRMWARE_PARAMETERS = new Set(['kasFirmware', 'batchKeyFirmware', 'wirelessKeyFirmware']);
const LIST_PARAMETERS = new Set(['assetList', 'usersAssets']);

/**
 * What a device does with a correction, as parameter name → new reported value: it installs
 * offered firmware, stores a list and reports the digest it came with, and takes every
 * other value as is. A message changes no parameter.
 */
export function parametersAfter(correction: Correction): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(correction)) {
    if (name === 'message' || name.endsWith('Digest')) continue;
    if (FIRMWARE_PARAMETERS.has(name)) changes[name] = (value as { version: string }).version;
    else if (LIST_PARAMETERS.has(name)) changes[name] = correction[`${name}Digest`];
    else changes[name] = value;
  }
  return changes;
}

export const applyCorrection = (reported: ReportedState, correction: Correction): ReportedState => ({
  ...reported,
  ...parametersAfter(correction),
});
