import { newerFirmware } from './firmware-offer.ts';
import type { Resolver } from './types.ts';

export const wirelessKeyFirmware: Resolver = (desired, reported) => {
  const offer = newerFirmware(desired.firmware.wireless_key, reported.wirelessKeyFirmware);
  return offer && { wirelessKeyFirmware: offer };
};
