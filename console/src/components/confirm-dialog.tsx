import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * Asks before something that cannot be undone, saying what follows. A modal <dialog>: focus
 * stays in it, Cancel has it first, Escape cancels.
 */
export function ConfirmDialog({
  title,
  confirmLabel,
  busyLabel,
  busy,
  onConfirm,
  onCancel,
  children,
}: {
  title: string;
  confirmLabel: string;
  busyLabel: string;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="acl-dialog" aria-labelledby="confirm-title" aria-describedby="confirm-what" onCancel={onCancel}>
      <h2 id="confirm-title">{title}</h2>
      <div id="confirm-what">{children}</div>
      <div class="page-actions">
        <button type="button" onClick={onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {busy ? busyLabel : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
