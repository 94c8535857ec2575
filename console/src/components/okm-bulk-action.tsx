import { useState } from 'preact/hooks';
import { applyOkmBulkAction, previewOkmBulkAction, type OkmBulkAction, type OkmBulkBody, type OkmBulkSelection } from '../api/client.ts';
import { actionOfDraft, actionWords, FIRMWARE_KINDS, SETTINGS, type ActionKind, type Draft, type SettingKey } from '../bulk-action.ts';
import { okmHref } from '../paths.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { ErrorState } from './states.tsx';
import { CustomerInput } from './customer-input.tsx';

/** How many serial numbers the preview shows before "and N more". */
const SHOWN = 12;

/**
 * "Act on these OKMs": one action (a setting, a firmware pin, a customer, a message, a
 * subscriber URL removed) on every OKM the list's filters select. Preview first (how many and
 * which), then a confirmation naming the count, then the API applies it to exactly the OKMs
 * previewed, in one transaction, or refuses (the list changed meanwhile: preview again).
 */
export function OkmBulkActionPanel({ filter, isAdmin, onDone }: { filter: OkmBulkBody['filter']; isAdmin: boolean; onDone: () => void }) {
  const [draft, setDraft] = useState<Draft>({
    kind: filter.subscriber_url === undefined ? 'setting' : 'unsubscribe',
    setting: 'polling_interval',
    value: '',
    firmwareKind: 'kas',
    version: '',
    customer: '',
    messageType: '',
    payload: '',
    url: filter.subscriber_url ?? '',
  });
  const [problem, setProblem] = useState<string | null>(null);
  const [preview, setPreview] = useState<{ action: OkmBulkAction; selection: OkmBulkSelection } | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | null>(null);

  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => {
    setDraft({ ...draft, [key]: value });
    setPreview(null);
    setDone(null);
  };

  const askPreview = async (event: Event) => {
    event.preventDefault();
    const action = actionOfDraft(draft);
    setError(undefined);
    setDone(null);
    if (typeof action === 'string') {
      setProblem(action);
      return;
    }
    setProblem(null);
    setBusy(true);
    try {
      setPreview({ action, selection: (await previewOkmBulkAction({ filter, action })).data });
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const apply = async () => {
    if (preview === null) return;
    setBusy(true);
    try {
      const result = (await applyOkmBulkAction({ filter, action: preview.action, serial_numbers: preview.selection.serial_numbers })).data;
      setDone(`Done: ${actionWords(preview.action)} on ${result.count} OKM${result.count === 1 ? '' : 's'}.`);
      setPreview(null);
      onDone();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  const selection = preview?.selection;
  return (
    <div class="card section bulk-action" data-testid="okm-bulk-action">
      <h2>Act on the OKMs these filters select</h2>
      <form class="filters" aria-label="Bulk action" onSubmit={askPreview}>
        <div class="field">
          <label for="bulk-kind">Action</label>
          <select id="bulk-kind" value={draft.kind} onChange={(event) => set('kind', event.currentTarget.value as ActionKind)}>
            <option value="setting">Set a setting</option>
            <option value="pin">Pin firmware</option>
            {isAdmin && <option value="assign">Assign a customer</option>}
            <option value="message">Queue a message</option>
            <option value="unsubscribe">Remove a subscriber URL</option>
          </select>
        </div>
        {draft.kind === 'setting' && (
          <>
            <div class="field">
              <label for="bulk-setting">Setting</label>
              <select id="bulk-setting" value={draft.setting} onChange={(event) => set('setting', event.currentTarget.value as SettingKey)}>
                {SETTINGS.map(({ key, label }) => (
                  <option key={key} value={key}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="bulk-value">Value</label>
              <input id="bulk-value" value={draft.value} size={8} placeholder={draft.setting === 'auditing_enabled' ? 'on / off' : 'empty: unset'} onInput={(event) => set('value', event.currentTarget.value)} />
            </div>
          </>
        )}
        {draft.kind === 'pin' && (
          <>
            <div class="field">
              <label for="bulk-firmware-kind">Firmware</label>
              <select id="bulk-firmware-kind" value={draft.firmwareKind} onChange={(event) => set('firmwareKind', event.currentTarget.value as Draft['firmwareKind'])}>
                {FIRMWARE_KINDS.map(({ key, label }) => (
                  <option key={key} value={key}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            <div class="field">
              <label for="bulk-version">Version</label>
              <input id="bulk-version" value={draft.version} size={9} placeholder="empty: no pin" onInput={(event) => set('version', event.currentTarget.value)} />
            </div>
          </>
        )}
        {draft.kind === 'assign' && (
          <div class="field">
            <label for="bulk-customer">Customer</label>
            <CustomerInput id="bulk-customer" value={draft.customer} size={12} placeholder="empty: none" onValue={(value) => set('customer', value)} />
          </div>
        )}
        {draft.kind === 'message' && (
          <>
            <div class="field">
              <label for="bulk-message-type">Message type</label>
              <input id="bulk-message-type" value={draft.messageType} size={12} onInput={(event) => set('messageType', event.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="bulk-payload">Payload (JSON)</label>
              <input id="bulk-payload" class="mono" value={draft.payload} size={20} placeholder='e.g. {"door": 2}' onInput={(event) => set('payload', event.currentTarget.value)} />
            </div>
          </>
        )}
        {draft.kind === 'unsubscribe' && (
          <div class="field">
            <label for="bulk-url">Subscriber URL</label>
            <input id="bulk-url" type="url" value={draft.url} size={28} placeholder="https://…" onInput={(event) => set('url', event.currentTarget.value)} />
          </div>
        )}
        <button type="submit" disabled={busy}>
          Preview
        </button>
        {problem !== null && (
          <p class="field-error" role="alert">
            {problem}
          </p>
        )}
      </form>
      {draft.kind === 'unsubscribe' && <p class="muted small">Only the OKMs holding the URL change; with no other filter, every OKM you may see that holds it.</p>}
      {error !== undefined && <ErrorState error={error} />}
      {done !== null && (
        <p class="notice notice-ok" role="status">
          {done}
        </p>
      )}
      {preview !== null && selection !== undefined && (
        <div class="bulk-preview" role="status" data-testid="okm-bulk-preview">
          {selection.count === 0 ? (
            <p>No OKM would change: none matches.</p>
          ) : (
            <>
              <p>
                <strong>
                  {selection.over_limit ? `More than ${selection.limit}` : selection.count} OKM{selection.count === 1 ? '' : 's'}
                </strong>{' '}
                would change: {actionWords(preview.action)}.
              </p>
              <ul class="bulk-serials">
                {selection.serial_numbers.slice(0, SHOWN).map((serial) => (
                  <li key={serial}>
                    <a class="mono" href={okmHref(serial)}>
                      {serial}
                    </a>
                  </li>
                ))}
                {selection.count > SHOWN && <li class="muted">and {selection.count - SHOWN} more</li>}
              </ul>
              {selection.over_limit ? (
                <p class="field-error">One action changes at most {selection.limit} OKMs: narrow the filters (a serial prefix, a customer) and act in parts.</p>
              ) : (
                <button type="button" class="primary" onClick={() => setConfirming(true)}>
                  Apply to {selection.count} OKM{selection.count === 1 ? '' : 's'}
                </button>
              )}
            </>
          )}
        </div>
      )}
      {confirming && preview !== null && (
        <ConfirmDialog
          title={`Change ${preview.selection.count} OKM${preview.selection.count === 1 ? '' : 's'}?`}
          confirmLabel={`Apply to ${preview.selection.count} OKM${preview.selection.count === 1 ? '' : 's'}`}
          busyLabel="Applying…"
          busy={busy}
          onConfirm={apply}
          onCancel={() => setConfirming(false)}
        >
          <p>
            This will {actionWords(preview.action)} on {preview.selection.count} OKM{preview.selection.count === 1 ? '' : 's'}, all at once. Each change is recorded in the audit
            trail. If the list changed since the preview, nothing changes and you are asked to preview again.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}
