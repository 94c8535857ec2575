import { useEffect, useRef } from 'preact/hooks';

/** Asks before a webhook endpoint is deleted, and says what goes with it. A modal <dialog>: Escape cancels. */
export function WebhookDeleteDialog({ url, deleting, onConfirm, onCancel }: { url: string; deleting: boolean; onConfirm: () => void; onCancel: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="acl-dialog" aria-labelledby="endpoint-delete-title" aria-describedby="endpoint-delete-what" onCancel={onCancel}>
      <h2 id="endpoint-delete-title">Delete this endpoint?</h2>
      <p id="endpoint-delete-what">
        <code class="break">{url}</code> receives no more events. Its queued deliveries and its delivery log go with it, with no way back.
      </p>
      <div class="page-actions">
        <button type="button" onClick={onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" disabled={deleting} onClick={onConfirm}>
          {deleting ? 'Deleting…' : 'Delete endpoint'}
        </button>
      </div>
    </dialog>
  );
}
