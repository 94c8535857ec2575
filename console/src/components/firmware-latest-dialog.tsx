import { etagOf, previewLatestFirmware, type FirmwareKind } from '../api/client.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { FIRMWARE_KIND_LABELS } from './firmware-kind-field.tsx';
import { ErrorState } from './states.tsx';
import { useResource } from './use-resource.ts';

const okms = (count: number) => `${count.toLocaleString()} OKM${count === 1 ? '' : 's'}`;

/**
 * Asks before the fleet latest of a kind is set (a version) or cleared (null): a change of every
 * customer's fleet. It names what the server counts the change reaches (GET …/latest/preview);
 * the change cannot be confirmed before the count has arrived.
 */
export function FirmwareLatestDialog({
  kind,
  version,
  saving,
  onConfirm,
  onCancel,
}: {
  kind: FirmwareKind;
  version: string | null;
  saving: boolean;
  /** `basedOn`: the version of the fleet latest the counts are of (the preview's ETag), for the change's If-Match. */
  onConfirm: (basedOn: string | null) => void;
  onCancel: () => void;
}) {
  const preview = useResource(() => previewLatestFirmware(kind, version), [kind, version]);
  const label = FIRMWARE_KIND_LABELS[kind];
  const counts = preview.data?.data;
  return (
    <ConfirmDialog
      title={version === null ? `Clear the fleet latest ${label}?` : `Make ${version} the fleet latest ${label}?`}
      confirmLabel={version === null ? 'Clear fleet latest' : `Make ${version} latest`}
      busyLabel={saving ? 'Saving…' : 'Counting…'}
      busy={saving || counts === undefined}
      onConfirm={() => onConfirm(etagOf(preview.data))}
      onCancel={onCancel}
    >
      {preview.error !== undefined ? (
        <ErrorState error={preview.error} retry={preview.reload} />
      ) : counts === undefined ? (
        <p aria-busy="true">Counting the OKMs this changes…</p>
      ) : (
        <>
          <p data-testid="latest-preview-count">
            This changes <strong>{okms(counts.okms)}</strong> of every customer: each OKM without a pin of this kind follows the fleet latest.
          </p>
          <p>
            {version === null
              ? counts.current === null
                ? 'There is no fleet latest now: nothing is offered either way.'
                : `${okms(counts.offered)} not on ${counts.current} yet will no longer be offered it; none is offered a version of this kind afterwards.`
              : `${okms(counts.offered)} not on ${version} will be offered it at ${counts.offered === 1 ? 'its' : 'their'} next poll${counts.current === null ? '' : ` (instead of ${counts.current})`}.`}
          </p>
          {counts.pinned > 0 && <p class="small muted">{okms(counts.pinned)} with a pin of this kind keep {counts.pinned === 1 ? 'its pin' : 'their pins'}.</p>}
        </>
      )}
    </ConfirmDialog>
  );
}
