import type { FirmwareKind } from '../api/client.ts';

/** The three firmware kinds, in the order the pages show them. */
export const FIRMWARE_KIND_LABELS: Record<FirmwareKind, string> = {
  kas: 'OKM (KAS) firmware',
  batch_key: 'Batch key firmware',
  wireless_key: 'Wireless (LoRa) key firmware',
};

export const FIRMWARE_KINDS = Object.keys(FIRMWARE_KIND_LABELS) as FirmwareKind[];
