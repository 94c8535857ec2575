import type { FirmwareKind } from '../api/client.ts';
import { FieldError, invalidProps } from './field-error.tsx';

/** The three firmware kinds, in the order the pages show them. */
export const FIRMWARE_KIND_LABELS: Record<FirmwareKind, string> = {
  kas: 'OKM (KAS) firmware',
  batch_key: 'Batch key firmware',
  wireless_key: 'Wireless (LoRa) key firmware',
};

export const FIRMWARE_KINDS = Object.keys(FIRMWARE_KIND_LABELS) as FirmwareKind[];

/** A form's "Kind" select, with the API's message about `kind` under it. */
export function FirmwareKindField({ id, kind, error, onChange }: { id: string; kind: FirmwareKind; error: unknown; onChange: (kind: FirmwareKind) => void }) {
  return (
    <div class="field">
      <label for={id}>Kind</label>
      <select id={id} value={kind} {...invalidProps(error, 'kind')} onChange={(event) => onChange(event.currentTarget.value as FirmwareKind)}>
        {FIRMWARE_KINDS.map((value) => (
          <option key={value} value={value}>
            {FIRMWARE_KIND_LABELS[value]}
          </option>
        ))}
      </select>
      <FieldError error={error} control="kind" />
    </div>
  );
}
