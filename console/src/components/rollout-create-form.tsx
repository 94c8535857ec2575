import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, createRollout, previewRollout, type FirmwareRelease, type Rollout, type RolloutBody, type RolloutPreview } from '../api/client.ts';
import { compareVersionsNewestFirst } from '../firmware-rows.ts';
import { createBody, EMPTY_ROLLOUT_FORM, previewBody, type FormProblem, type RolloutForm } from '../rollout-form.ts';
import { errorFor, FieldError, invalidProps } from './field-error.tsx';
import { FirmwareKindField } from './firmware-kind-field.tsx';
import { RolloutGroupPreview } from './rollout-group-preview.tsx';
import { CustomerInput } from './customer-input.tsx';

/** How long the form waits after the last change before it asks for a new preview. */
const PREVIEW_DELAY_MS = 350;

const FIELDS = ['customer', 'kind', 'version', 'groups', 'filter', 'success_threshold', 'error_threshold', 'update_timeout', 'start_at', 'maintenance_window'];

/** A problem the browser found, shown as the API's are: next to its field. */
const asFieldError = (problem: FormProblem) => new ApiError(400, 'INVALID_FORM', problem.message, problem.field);

/** Creates a rollout (state ready), showing the group sizes the server would choose as the form changes. */
export function RolloutCreateForm({ releases, isAdmin, onCreated }: { releases: FirmwareRelease[]; isAdmin: boolean; onCreated: (rollout: Rollout) => void }) {
  const [form, setForm] = useState<RolloutForm>(() => ({ ...EMPTY_ROLLOUT_FORM, version: newestOf(releases, EMPTY_ROLLOUT_FORM.kind) }));
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [preview, setPreview] = useState<{ data?: RolloutPreview; loading: boolean; error?: unknown }>({ loading: false });
  const previewGeneration = useRef(0);
  const versions = useMemo(
    () => releases.filter((release) => release.kind === form.kind).map((release) => release.version).sort(compareVersionsNewestFirst),
    [releases, form.kind],
  );

  const set = <K extends keyof RolloutForm>(key: K, value: RolloutForm[K]) => setForm((previous) => ({ ...previous, [key]: value }));

  const draft = previewBody(form);
  const previewKey = JSON.stringify(draft);
  useEffect(() => {
    const mine = ++previewGeneration.current;
    if ('problem' in draft) {
      setPreview({ loading: false, error: asFieldError(draft.problem) });
      return undefined;
    }
    setPreview((previous) => ({ data: previous.data, loading: true }));
    const timer = setTimeout(() => {
      previewRollout(draft.body as RolloutBody).then(
        (answer) => mine === previewGeneration.current && setPreview({ data: answer.data, loading: false }),
        (failure: unknown) => mine === previewGeneration.current && setPreview({ loading: false, error: failure }),
      );
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
  }, [previewKey]);

  const submit = async (event: Event) => {
    event.preventDefault();
    const made = createBody(form);
    if ('problem' in made) {
      setError(asFieldError(made.problem));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      onCreated((await createRollout(made.body as RolloutBody)).data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  // The create's error wins; until the operator submits, the preview's shows where it belongs.
  const shown = error ?? preview.error;
  const unplaced = shown !== undefined && !FIELDS.some((control) => errorFor(shown, control) !== undefined);

  return (
    <form class="rollout-form" onSubmit={submit} aria-label="New rollout" noValidate>
      <div class="card">
        <h2>Release and OKMs</h2>
        {isAdmin && (
          <div class="field">
            <label for="rollout-customer">Customer</label>
            <CustomerInput id="rollout-customer" value={form.customer} placeholder="every customer" {...invalidProps(shown, 'customer')} onValue={(value) => set('customer', value)} />
            <p class="field-hint">Empty: the OKMs of every customer.</p>
            <FieldError error={shown} control="customer" />
          </div>
        )}
        <div class="form-row">
          <FirmwareKindField
            id="rollout-kind"
            kind={form.kind}
            error={shown}
            onChange={(kind) => setForm((previous) => ({ ...previous, kind, version: newestOf(releases, kind) }))}
          />
          <div class="field">
            <label for="rollout-version">Version</label>
            <select id="rollout-version" value={form.version} {...invalidProps(shown, 'version')} onChange={(event) => set('version', event.currentTarget.value)}>
              {versions.length === 0 && <option value="">no release of this kind</option>}
              {versions.map((version) => (
                <option key={version} value={version}>
                  {version}
                </option>
              ))}
            </select>
            <FieldError error={shown} control="version" />
          </div>
        </div>
        <div class="field">
          <label for="rollout-groups">Groups (cumulative % of the OKMs)</label>
          <input id="rollout-groups" value={form.groups} aria-describedby="rollout-groups-hint" {...invalidProps(shown, 'groups')} onInput={(event) => set('groups', event.currentTarget.value)} />
          <p class="field-hint" id="rollout-groups-hint">
            “1, 10, 100”: 1 % first, then up to 10 %, then all.
          </p>
          <FieldError error={shown} control="groups" />
        </div>
        <fieldset class="field">
          <legend>Only these OKMs (optional)</legend>
          <div class="field">
            <label for="rollout-filter-version">Reporting version</label>
            <input id="rollout-filter-version" value={form.filter_firmware_version} placeholder="any" {...invalidProps(shown, 'filter.firmware_version')} onInput={(event) => set('filter_firmware_version', event.currentTarget.value)} />
            <FieldError error={shown} control="filter.firmware_version" />
          </div>
          <div class="field">
            <label for="rollout-filter-serials">Serial numbers</label>
            <textarea id="rollout-filter-serials" rows={2} value={form.filter_serial_numbers} placeholder="one a line; empty: all" {...invalidProps(shown, 'filter.serial_numbers')} onInput={(event) => set('filter_serial_numbers', event.currentTarget.value)} />
            <FieldError error={shown} control="filter.serial_numbers" />
          </div>
        </fieldset>
        <h3>Group sizes</h3>
        <RolloutGroupPreview preview={preview.data} loading={preview.loading} />
      </div>
      <div class="card">
        <h2>Pace and safety</h2>
        <div class="form-row">
          <NumberField id="rollout-success" control="success_threshold" label="Success threshold (%)" hint="a group passes when this share has updated" value={form.success_threshold} error={shown} onInput={(value) => set('success_threshold', value)} />
          <NumberField id="rollout-error" control="error_threshold" label="Error threshold (%)" hint="pause when more than this share of a group failed" value={form.error_threshold} error={shown} onInput={(value) => set('error_threshold', value)} />
        </div>
        <div class="field">
          <label for="rollout-timeout">Update timeout</label>
          <input id="rollout-timeout" value={form.update_timeout} size={8} aria-describedby="rollout-timeout-hint" {...invalidProps(shown, 'update_timeout')} onInput={(event) => set('update_timeout', event.currentTarget.value)} />
          <p class="field-hint" id="rollout-timeout-hint">
            an offered OKM that polls on this long without updating has failed (30m, 1h, 2d)
          </p>
          <FieldError error={shown} control="update_timeout" />
        </div>
        <label class="checkbox">
          <input type="checkbox" checked={form.auto_advance} onChange={(event) => set('auto_advance', event.currentTarget.checked)} /> Start the next group by itself when a group passes
        </label>
        <label class="checkbox last-checkbox">
          <input type="checkbox" checked={form.approval_required} onChange={(event) => set('approval_required', event.currentTarget.checked)} /> Another operator must approve it before it starts
        </label>
        <div class="field">
          <label for="rollout-start-at">Starts by itself at (your time)</label>
          <input id="rollout-start-at" type="datetime-local" value={form.start_at} {...invalidProps(shown, 'start_at')} onInput={(event) => set('start_at', event.currentTarget.value)} />
          <p class="field-hint">Empty: start it by hand.</p>
          <FieldError error={shown} control="start_at" />
        </div>
        <fieldset class="field">
          <legend>Maintenance window (optional)</legend>
          <p class="field-hint">Offers only between these times of the customer’s local time zone.</p>
          <div class="form-row">
            <div class="field">
              <label for="rollout-window-from">From</label>
              <input id="rollout-window-from" type="time" value={form.window_from} {...invalidProps(shown, 'maintenance_window')} onInput={(event) => set('window_from', event.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="rollout-window-to">To</label>
              <input id="rollout-window-to" type="time" value={form.window_to} {...invalidProps(shown, 'maintenance_window')} onInput={(event) => set('window_to', event.currentTarget.value)} />
            </div>
          </div>
          <FieldError error={shown} control="maintenance_window" />
        </fieldset>
        {unplaced && (
          <p class="field-error" role="alert">
            {shown instanceof Error ? shown.message : String(shown)}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create rollout'}
        </button>
        <p class="field-hint">It is created in state ready, its groups chosen now; nothing is offered until it starts.</p>
      </div>
    </form>
  );
}

function NumberField({ id, control, label, hint, value, error, onInput }: { id: string; control: string; label: string; hint: string; value: string; error: unknown; onInput: (value: string) => void }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} inputMode="numeric" size={5} value={value} aria-describedby={`${id}-hint`} {...invalidProps(error, control)} onInput={(event) => onInput(event.currentTarget.value)} />
      <p class="field-hint" id={`${id}-hint`}>
        {hint}
      </p>
      <FieldError error={error} control={control} />
    </div>
  );
}

function newestOf(releases: FirmwareRelease[], kind: RolloutForm['kind']): string {
  return releases.filter((release) => release.kind === kind).map((release) => release.version).sort(compareVersionsNewestFirst)[0] ?? '';
}
