import { newerFirmware } from './firmware-offer.ts';
import type { Resolver } from './types.ts';

export const batchKeyFirmware: Resolver = (desired, reported) => {
  const offer = newerFirmware(desired.firmware.batch_key, reported.batchKeyFirmware);
  return offer && { batchKeyFirmware: offer };
};
