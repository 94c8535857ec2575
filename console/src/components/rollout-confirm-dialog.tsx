import { useEffect, useRef } from 'preact/hooks';

const WHAT_HAPPENS = {
  pause: {
    title: 'Pause this rollout?',
    confirm: 'Pause rollout',
    what: 'From its next poll on, no OKM is offered the version while the rollout is paused, not even in the groups already started: they keep the fleet latest. OKMs that updated stay updated. Resume carries on where it stopped.',
  },
  abort: {
    title: 'Abort this rollout?',
    confirm: 'Abort rollout',
    what: 'Emergency stop: no OKM that has not updated will be offered the version from its next poll on; they are back on the fleet latest (or their own pin), and the groups not started never start. OKMs that updated keep the version. It cannot be undone: create a new rollout instead.',
  },
} as const;

/**
 * Asks before a rollout is paused or aborted, and says what will happen. A modal <dialog>:
 * focus stays in it, Escape cancels.
 */
export function RolloutConfirmDialog({
  action,
  rolloutName,
  busy,
  onConfirm,
  onCancel,
}: {
  action: keyof typeof WHAT_HAPPENS;
  rolloutName: string;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const text = WHAT_HAPPENS[action];
  return (
    <dialog ref={dialog} class="acl-dialog" aria-labelledby="rollout-confirm-title" aria-describedby="rollout-confirm-what" onCancel={onCancel}>
      <h2 id="rollout-confirm-title">{text.title}</h2>
      <p class="muted">{rolloutName}</p>
      <p id="rollout-confirm-what" class={action === 'abort' ? 'notice notice-warning' : undefined}>
        {text.what}
      </p>
      <div class="page-actions">
        <button type="button" onClick={onCancel} autofocus>
          Cancel
        </button>
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {busy ? 'Working…' : text.confirm}
        </button>
      </div>
    </dialog>
  );
}
