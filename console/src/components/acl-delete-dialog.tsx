import { useEffect, useRef } from 'preact/hooks';
import { okmHref } from '../paths.ts';

/**
 * Asks before an ACL is deleted, and says what follows: the linked OKM, if any, gets a
 * delete-assets message on its next poll. A modal <dialog>: focus stays in it, Escape cancels.
 */
export function AclDeleteDialog({
  aclId,
  linkedOkm,
  users,
  deleting,
  onConfirm,
  onCancel,
}: {
  aclId: string;
  linkedOkm: string | null;
  users: number;
  deleting: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} class="acl-dialog" aria-labelledby="acl-delete-title" aria-describedby="acl-delete-what" onCancel={onCancel}>
      <h2 id="acl-delete-title">Delete this ACL?</h2>
      <div id="acl-delete-what">
        <p>
          ACL <code>{aclId}</code> and its {users.toLocaleString()} users go, with no way back.
        </p>
        {linkedOkm !== null ? (
          <p class="notice notice-warning">
            It is linked to OKM <a href={okmHref(linkedOkm)}>{linkedOkm}</a>: a <strong>delete-assets</strong> message follows, and on its next
            poll the OKM deletes the users and locks it holds.
          </p>
        ) : (
          <p>No OKM is linked to it, so no delete-assets message is sent.</p>
        )}
      </div>
      <div class="page-actions">
        <button type="button" onClick={onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" disabled={deleting} onClick={onConfirm}>
          {deleting ? 'Deleting…' : 'Delete ACL'}
        </button>
      </div>
    </dialog>
  );
}
