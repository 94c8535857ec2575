import { useState } from 'preact/hooks';
import { previewAclUserRemoval, removeAclUser, type AclUserRemoval } from '../api/client.ts';
import { aclHref, okmHref } from '../paths.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { ErrorState } from './states.tsx';

const USER_ID_MAX = 999_999_999;
const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/**
 * Offboarding: a user id removed from every ACL of the customer at once. Preview first (which
 * ACLs hold the user, which OKMs are linked to them), then a confirmation naming the counts;
 * the API removes it from exactly the ACLs previewed, in one transaction, or refuses when
 * others hold it now (preview again).
 */
export function AclUserRemovalPanel({ customer, customerInUrl, onDone }: { customer: string; customerInUrl: string | undefined; onDone: () => void }) {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [preview, setPreview] = useState<AclUserRemoval | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | null>(null);

  const askPreview = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setDone(null);
    setPreview(null);
    const trimmed = text.trim();
    if (!/^[0-9]{1,9}$/.test(trimmed) || Number(trimmed) > USER_ID_MAX) {
      setProblem(`A user id is a whole number from 0 to ${USER_ID_MAX.toLocaleString()}.`);
      return;
    }
    setProblem(null);
    setBusy(true);
    try {
      setPreview((await previewAclUserRemoval(Number(trimmed), customer)).data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    if (preview === null) return;
    setBusy(true);
    try {
      const result = (await removeAclUser(preview.user_id, customer, preview.acls.map((acl) => acl.id))).data;
      setDone(`User ${result.user_id} removed from ${plural(result.acls.length, 'ACL')} of ${result.customer}.`);
      setPreview(null);
      onDone();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  return (
    <div class="card section bulk-action" data-testid="acl-user-removal">
      <h2>Remove a user from every ACL of {customer}</h2>
      <form class="filters" aria-label="Remove a user from every ACL" onSubmit={askPreview}>
        <div class="field">
          <label for="removal-user">User id</label>
          <input
            id="removal-user"
            value={text}
            size={12}
            inputMode="numeric"
            autocomplete="off"
            aria-invalid={problem !== null || undefined}
            onInput={(event) => {
              setText(event.currentTarget.value);
              setPreview(null);
            }}
          />
        </div>
        <button type="submit" disabled={busy}>
          Preview
        </button>
        {problem !== null && (
          <p class="field-error" role="alert">
            {problem}
          </p>
        )}
      </form>
      {error !== undefined && <ErrorState error={error} />}
      {done !== null && (
        <p class="notice notice-ok" role="status">
          {done}
        </p>
      )}
      {preview !== null && (
        <div class="bulk-preview" role="status" data-testid="acl-user-removal-preview">
          {preview.acls.length === 0 ? (
            <p>User {preview.user_id} is in no ACL of {preview.customer}.</p>
          ) : (
            <>
              <p>
                User {preview.user_id} is in{' '}
                <strong>
                  {preview.over_limit ? 'more than ' : ''}
                  {plural(preview.acls.length, 'ACL')}
                </strong>
                {preview.okm_ids.length > 0 && <>, linked to {plural(preview.okm_ids.length, 'OKM')} whose next poll gets the new user list</>}:
              </p>
              <ul class="bulk-serials">
                {preview.acls.map((acl) => (
                  <li key={acl.id}>
                    <a href={aclHref(acl.id, customerInUrl)} class={acl.name === null ? 'mono' : undefined}>
                      {acl.name ?? acl.id}
                    </a>
                    {acl.okm_id !== null && (
                      <>
                        {' '}
                        <span class="muted">→ OKM</span>{' '}
                        <a class="mono" href={okmHref(acl.okm_id)}>
                          {acl.okm_id}
                        </a>
                      </>
                    )}
                  </li>
                ))}
              </ul>
              {preview.over_limit ? (
                <p class="field-error">One removal changes at most {preview.acls.length} ACLs: remove the user from some of them one ACL at a time first.</p>
              ) : (
                <button type="button" class="danger" onClick={() => setConfirming(true)}>
                  Remove from {plural(preview.acls.length, 'ACL')}
                </button>
              )}
            </>
          )}
        </div>
      )}
      {confirming && preview !== null && (
        <ConfirmDialog
          title={`Remove user ${preview.user_id}?`}
          confirmLabel={`Remove from ${plural(preview.acls.length, 'ACL')}`}
          busyLabel="Removing…"
          busy={busy}
          onConfirm={remove}
          onCancel={() => setConfirming(false)}
        >
          <p>
            User {preview.user_id} loses access through {plural(preview.acls.length, 'ACL')} of {preview.customer}
            {preview.okm_ids.length > 0 ? ` and ${plural(preview.okm_ids.length, 'OKM')}` : ''}, all at once. Each ACL's change is recorded in the audit trail. If
            another ACL got the user since the preview, nothing changes and you are asked to preview again.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}
