import { newerFirmware } from './firmware-offer.ts';
import type { Resolver } from './types.ts';

export const kasFirmware: Resolver = (desired, reported) => {
  const offer = newerFirmware(desired.firmware.kas, reported.kasFirmware);
  return offer && { kasFirmware: offer };
};
