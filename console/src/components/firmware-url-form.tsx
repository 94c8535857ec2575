import { useState } from 'preact/hooks';
import { addFirmwareUrl, type FirmwareKind, type FirmwareRelease } from '../api/client.ts';
import { errorFor, FieldError, invalidProps } from './field-error.tsx';
import { FirmwareKindField } from './firmware-kind-field.tsx';

const FIELDS = ['kind', 'version', 'url', 'sha256'];

/** Admin: adds a release that devices download from another server. */
export function FirmwareUrlForm({ onAdded }: { onAdded: (release: FirmwareRelease) => void }) {
  const [kind, setKind] = useState<FirmwareKind>('kas');
  const [version, setVersion] = useState('');
  const [url, setUrl] = useState('');
  const [sha256, setSha256] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const answer = await addFirmwareUrl({ kind, version: version.trim(), url: url.trim(), sha256: sha256.trim() });
      setVersion('');
      setUrl('');
      setSha256('');
      onAdded(answer.data);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card firmware-form" onSubmit={submit} aria-labelledby="firmware-url-title" noValidate>
      <h2 id="firmware-url-title">Add a release by URL</h2>
      <FirmwareKindField id="url-kind" kind={kind} error={error} onChange={setKind} />
      <div class="field">
        <label for="url-version">Version</label>
        <input id="url-version" value={version} placeholder="2.10.0" {...invalidProps(error, 'version')} onInput={(event) => setVersion(event.currentTarget.value)} />
        <FieldError error={error} control="version" />
      </div>
      <div class="field">
        <label for="url-url">Download URL</label>
        <input id="url-url" type="url" value={url} placeholder="https://…" {...invalidProps(error, 'url')} onInput={(event) => setUrl(event.currentTarget.value)} />
        <FieldError error={error} control="url" />
      </div>
      <div class="field">
        <label for="url-sha256">SHA-256 of the file</label>
        <input id="url-sha256" class="mono" value={sha256} spellcheck={false} {...invalidProps(error, 'sha256')} onInput={(event) => setSha256(event.currentTarget.value)} />
        <FieldError error={error} control="sha256" />
      </div>
      {error !== undefined && !FIELDS.some((control) => errorFor(error, control) !== undefined) && (
        <p class="field-error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
      )}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Adding…' : 'Add release'}
      </button>
    </form>
  );
}
