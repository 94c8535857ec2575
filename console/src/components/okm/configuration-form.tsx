import { useEffect, useState } from 'preact/hooks';
import { etagOf, patchOkm, VersionConflict, type OkmPatch, type OkmRecord } from '../../api/client.ts';
import { changedFields, FIELD_LABELS, formFromRecord, patchFromForm, type OkmForm } from '../../okm-form.ts';
import { FieldError, invalidProps } from '../field-error.tsx';
import { ErrorState } from '../states.tsx';
import { useLeaveGuard } from '../use-leave-guard.ts';
import { VersionConflictView } from '../version-conflict.tsx';

/** How long "Saved." stays: long enough to be read, short enough not to describe a later state. */
const SAVED_SHOWN_MS = 5_000;

/**
 * The OKM's configuration, sent as a merge patch of what changed; the API's message is shown
 * next to the field it names. `okm` is the record as last fetched (the page refreshes it):
 * while the form holds no changes it follows it; once something is typed, the form keeps
 * what was typed and the record it started from (`base`), says when the server's record has
 * changed since, and sends only the person's own changes, made against `base`.
 */
export function ConfigurationForm({ okm, onSaved }: { okm: OkmRecord; onSaved: () => void }) {
  const [base, setBase] = useState<OkmRecord>(okm);
  const [form, setForm] = useState<OkmForm>(() => formFromRecord(okm));
  const [error, setError] = useState<unknown>(undefined);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  // A save that met a 412: the record as the other writer left it.
  const [conflict, setConflict] = useState<OkmRecord | null>(null);
  const patch = patchFromForm(base, form);
  const changed = Object.keys(patch).length > 0;
  const serverChanges = changed ? changedFields(base, okm) : [];

  useEffect(() => {
    if (changed || okm === base) return;
    setBase(okm);
    setForm(formFromRecord(okm));
  }, [okm, changed]);
  useEffect(() => {
    if (!saved) return undefined;
    const timer = setTimeout(() => setSaved(false), SAVED_SHOWN_MS);
    return () => clearTimeout(timer);
  }, [saved]);
  useLeaveGuard(changed, 'the OKM’s configuration');

  const startFrom = (record: OkmRecord) => {
    setBase(record);
    setForm(formFromRecord(record));
    setError(undefined);
    setConflict(null);
  };
  /** The form fields this person changed, relative to the record the form started from. */
  const ownFields = () => {
    const started = formFromRecord(base);
    return (Object.keys(FIELD_LABELS) as (keyof OkmForm)[]).filter((key) => form[key] !== started[key]);
  };
  /** Their record with this person's own field values on top: saving it sends only those, now based on their version. */
  const mergeOntoTheirs = (theirs: OkmRecord) => {
    const merged = formFromRecord(theirs);
    for (const key of ownFields()) (merged as unknown as Record<string, unknown>)[key] = form[key];
    setBase(theirs);
    setForm(merged);
    setConflict(null);
  };
  const set = <K extends keyof OkmForm>(key: K, value: OkmForm[K]) => {
    setForm((previous) => ({ ...previous, [key]: value }));
    setSaved(false);
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    setSaving(true);
    setError(undefined);
    try {
      // Sent as typed: a value the form cannot check (a wrong number) is the API's to name. With
      // the version it was based on (If-Match): a change saved meanwhile by another writer is a
      // 412, shown as a conflict, never overwritten.
      startFrom((await patchOkm(okm.serial_number, patch as OkmPatch, etagOf(base))).data);
      setSaved(true);
      onSaved();
    } catch (failure) {
      if (failure instanceof VersionConflict && failure.current !== null) setConflict(failure.current as OkmRecord);
      else setError(failure);
    } finally {
      setSaving(false);
    }
  };
  const unplaced = error !== undefined && !FIELDS.some((field) => invalidProps(error, field)['aria-invalid']);

  return (
    <form class="config-form" onSubmit={submit} aria-label="Configuration" noValidate>
      {conflict !== null && (
        <VersionConflictView
          what="OKM configuration"
          theirs={changedFields(base, conflict).map((label) => `Changed ${label}`)}
          yours={ownFields().map((key) => `Changed ${FIELD_LABELS[key]}`)}
          notes={changedFields(base, conflict).filter((label) => ownFields().some((key) => FIELD_LABELS[key] === label)).map((label) => `Both of you changed ${label}: a merge keeps your value.`)}
          onMerge={() => mergeOntoTheirs(conflict)}
          onReload={() => startFrom(conflict)}
        />
      )}
      {conflict === null && serverChanges.length > 0 && (
        <div class="notice notice-warning server-changed" role="status">
          <p>
            This OKM was changed on the server since you started editing ({serverChanges.join(', ')}). Saving overwrites nothing: it shows both sides'
            changes and lets you merge yours onto theirs or reload. The form still shows the values you started from.
          </p>
          <button type="button" onClick={() => startFrom(okm)}>
            Load the server’s values
          </button>
        </div>
      )}
      <div class="form-grid">
        <div class="field">
          <label for="polling_interval">Polling interval (s)</label>
          <input id="polling_interval" name="polling_interval" inputMode="numeric" placeholder={`fleet default`} value={form.polling_interval} onInput={(event) => set('polling_interval', event.currentTarget.value)} {...invalidProps(error, 'polling_interval')} />
          <p class="field-hint">5–3600; empty: the fleet default</p>
          <FieldError error={error} control="polling_interval" />
        </div>
        <div class="field">
          <label for="cache_mode">Cache mode</label>
          <select id="cache_mode" value={form.cache_mode} onChange={(event) => set('cache_mode', event.currentTarget.value as OkmForm['cache_mode'])} {...invalidProps(error, 'cache_mode')}>
            <option value="">Not set</option>
            <option value="1">1 — disabled</option>
            <option value="2">2 — enabled</option>
          </select>
          <FieldError error={error} control="cache_mode" />
        </div>
        <div class="field">
          <label for="key_checkout_window_time">Key checkout window (s)</label>
          <input id="key_checkout_window_time" inputMode="numeric" value={form.key_checkout_window_time} onInput={(event) => set('key_checkout_window_time', event.currentTarget.value)} {...invalidProps(error, 'key_checkout_window')} />
          <FieldError error={error} control="key_checkout_window" />
        </div>
        <div class="field">
          <label for="key_checkout_window_contact">Window contact</label>
          <select id="key_checkout_window_contact" value={form.key_checkout_window_contact} onChange={(event) => set('key_checkout_window_contact', event.currentTarget.value as OkmForm['key_checkout_window_contact'])}>
            <option value="">Not set</option>
            <option value="open">open</option>
            <option value="closed">closed</option>
          </select>
        </div>
        <div class="field">
          <label for="firmware_kas">KAS firmware pin</label>
          <input id="firmware_kas" placeholder="fleet latest" value={form.firmware_kas} onInput={(event) => set('firmware_kas', event.currentTarget.value)} {...invalidProps(error, 'firmware.kas')} />
          <FieldError error={error} control="firmware.kas" />
        </div>
        <div class="field">
          <label for="firmware_batch_key">Batch key firmware pin</label>
          <input id="firmware_batch_key" placeholder="fleet latest" value={form.firmware_batch_key} onInput={(event) => set('firmware_batch_key', event.currentTarget.value)} {...invalidProps(error, 'firmware.batch_key')} />
          <FieldError error={error} control="firmware.batch_key" />
        </div>
        <div class="field">
          <label for="firmware_wireless_key">Wireless key firmware pin</label>
          <input id="firmware_wireless_key" placeholder="fleet latest" value={form.firmware_wireless_key} onInput={(event) => set('firmware_wireless_key', event.currentTarget.value)} {...invalidProps(error, 'firmware.wireless_key')} />
          <FieldError error={error} control="firmware.wireless_key" />
        </div>
        <div class="field">
          <label class="checkbox" for="auditing_enabled">
            <input id="auditing_enabled" type="checkbox" checked={form.auditing_enabled} onChange={(event) => set('auditing_enabled', event.currentTarget.checked)} />
            Auditing enabled
          </label>
        </div>
      </div>
      <div class="form-grid wide">
        <div class="field">
          <label for="asset_list">Asset list (one lock serial a line)</label>
          <textarea id="asset_list" rows={3} value={form.asset_list} disabled={base.acl_id !== null} onInput={(event) => set('asset_list', event.currentTarget.value)} {...invalidProps(error, 'asset_list')} />
          {base.acl_id !== null && <p class="field-hint">Kept by the linked ACL {base.acl_id}.</p>}
          <FieldError error={error} control="asset_list" />
        </div>
        <div class="field">
          <label for="status_urls">Status-event subscriber URLs (one a line)</label>
          <textarea id="status_urls" rows={3} value={form.status_urls} onInput={(event) => set('status_urls', event.currentTarget.value)} {...invalidProps(error, 'subscribe_urls')} />
          <FieldError error={error} control="subscribe_urls" />
        </div>
      </div>
      {unplaced && <ErrorState error={error} />}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={!changed || saving || conflict !== null}>
          {saving ? 'Saving…' : 'Save changes'}
        </button>
        <button type="button" disabled={!changed || saving} onClick={() => startFrom(okm)}>
          Discard
        </button>
        <span role="status" class={saved && !changed ? 'saved-note' : 'muted small'}>
          {saved && !changed ? 'Saved.' : changed ? `Changes: ${Object.keys(patch).join(', ')}` : ''}
        </span>
      </div>
    </form>
  );
}

/** The fields an API message may name; any other message is shown under the form. */
const FIELDS = ['polling_interval', 'cache_mode', 'key_checkout_window', 'firmware.kas', 'firmware.batch_key', 'firmware.wireless_key', 'asset_list', 'subscribe_urls'];
