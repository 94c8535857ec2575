import { useState } from 'preact/hooks';
import { applyOkmBulkAction, previewOkmBulkAction, type OkmBulkAction, type OkmBulkBody, type OkmBulkSelection } from '../api/client.ts';
import { okmHref } from '../paths.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { ErrorState } from './states.tsx';

type ActionKind = 'setting' | 'pin' | 'assign' | 'message' | 'unsubscribe';

const SETTINGS = [
  { key: 'polling_interval', label: 'Polling interval (seconds, 5–3600)' },
  { key: 'cache_mode', label: 'Cache mode (1 disabled, 2 enabled)' },
  { key: 'auditing_enabled', label: 'Auditing (on / off)' },
] as const;
type SettingKey = (typeof SETTINGS)[number]['key'];

const FIRMWARE_KINDS = [
  { key: 'kas', label: 'KAS' },
  { key: 'batch_key', label: 'Batch key' },
  { key: 'wireless_key', label: 'Wireless key' },
] as const;

/** How many serial numbers the preview shows before "and N more". */
const SHOWN = 12;

/** What the form holds, as the operator typed it. */
interface Draft {
  kind: ActionKind;
  setting: SettingKey;
  value: string;
  firmwareKind: (typeof FIRMWARE_KINDS)[number]['key'];
  version: string;
  customer: string;
  messageType: string;
  payload: string;
  url: string;
}

/** The action the draft describes, or the reason it is not one yet (in plain words, before the API is asked). */
export function actionOfDraft(draft: Draft): OkmBulkAction | string {
  const blankIsNull = (text: string) => (text.trim() === '' ? null : text.trim());
  switch (draft.kind) {
    case 'setting': {
      const text = draft.value.trim().toLowerCase();
      if (draft.setting === 'auditing_enabled') {
        if (!['on', 'off', 'true', 'false'].includes(text)) return 'Auditing: type on or off.';
        return { type: 'configure', settings: { auditing_enabled: text === 'on' || text === 'true' } };
      }
      if (text === '') return { type: 'configure', settings: { [draft.setting]: null } };
      const number = Number(text);
      if (!Number.isInteger(number)) return 'Type a whole number, or leave it empty to unset the setting.';
      return { type: 'configure', settings: { [draft.setting]: number } } as OkmBulkAction;
    }
    case 'pin':
      return { type: 'configure', settings: { firmware: { [draft.firmwareKind]: blankIsNull(draft.version) } } };
    case 'assign':
      return { type: 'assign', customer: blankIsNull(draft.customer) };
    case 'message': {
      if (draft.messageType.trim() === '') return 'Name the message type.';
      if (draft.payload.trim() === '') return { type: 'queue_message', message: { type: draft.messageType.trim() } };
      try {
        return { type: 'queue_message', message: { type: draft.messageType.trim(), payload: JSON.parse(draft.payload) as unknown } };
      } catch {
        return 'The payload is not JSON.';
      }
    }
    case 'unsubscribe':
      return draft.url.trim() === '' ? 'Type the subscriber URL to remove.' : { type: 'remove_subscriber_url', url: draft.url.trim() };
  }
}

/** The action in words, for the confirmation: "set polling_interval to 300". */
function actionWords(action: OkmBulkAction): string {
  switch (action.type) {
    case 'configure': {
      const [name, value] = Object.entries(action.settings)[0] ?? ['', null];
      if (name === 'firmware') {
        const [kind, version] = Object.entries(value as Record<string, string | null>)[0] ?? ['', null];
        return version === null ? `remove the ${kind} firmware pin` : `pin ${kind} firmware ${version}`;
      }
      return value === null ? `unset ${name} (fleet default)` : `set ${name} to ${String(value)}`;
    }
    case 'assign':
      return action.customer === null ? 'take them from their customer (none)' : `assign them to ${action.customer}`;
    case 'queue_message':
      return `queue a "${action.message.type}" message`;
    case 'remove_subscriber_url':
      return `remove the subscriber ${action.url}`;
  }
}

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
            <input id="bulk-customer" value={draft.customer} size={12} placeholder="empty: none" onInput={(event) => set('customer', event.currentTarget.value)} />
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
