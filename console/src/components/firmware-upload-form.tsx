import { useState } from 'preact/hooks';
import { uploadFirmware, type FirmwareKind, type FirmwareRelease } from '../api/client.ts';
import { byteSize } from '../firmware-rows.ts';
import { errorFor, FieldError, invalidProps } from './field-error.tsx';
import { FirmwareKindField } from './firmware-kind-field.tsx';

/** Admin: uploads a release file to keyfleet, showing how much of it has been sent. */
export function FirmwareUploadForm({ onAdded }: { onAdded: (release: FirmwareRelease) => void }) {
  const [kind, setKind] = useState<FirmwareKind>('kas');
  const [version, setVersion] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [error, setError] = useState<unknown>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (file === null) return;
    setError(undefined);
    setProgress({ sent: 0, total: file.size });
    try {
      const answer = await uploadFirmware(kind, version.trim(), file, (sent, total) => setProgress({ sent, total }));
      setVersion('');
      setFile(null);
      (event.target as HTMLFormElement).reset();
      onAdded(answer.data);
    } catch (failure) {
      setError(failure);
    } finally {
      setProgress(null);
    }
  };

  const percent = progress === null || progress.total === 0 ? 0 : Math.round((progress.sent / progress.total) * 100);
  return (
    <form class="card firmware-form" onSubmit={submit} aria-labelledby="firmware-upload-title">
      <h2 id="firmware-upload-title">Upload a release file</h2>
      <FirmwareKindField id="upload-kind" kind={kind} error={error} onChange={setKind} />
      <div class="field">
        <label for="upload-version">Version</label>
        <input id="upload-version" value={version} placeholder="2.10.0" required {...invalidProps(error, 'version')} onInput={(event) => setVersion(event.currentTarget.value)} />
        <FieldError error={error} control="version" />
      </div>
      <div class="field">
        <label for="upload-file">File</label>
        <input id="upload-file" type="file" required onChange={(event) => setFile(event.currentTarget.files?.[0] ?? null)} />
        {file !== null && <p class="field-hint">{byteSize(file.size)}</p>}
      </div>
      {progress !== null && (
        <div class="field upload-progress" role="status" aria-live="polite">
          <label for="upload-progress">Uploading {file?.name}</label>
          <progress id="upload-progress" max={progress.total} value={progress.sent} />
          <span data-testid="upload-percent">
            {percent}% ({byteSize(progress.sent)} of {byteSize(progress.total)})
          </span>
        </div>
      )}
      {error !== undefined && !['kind', 'version'].some((control) => errorFor(error, control) !== undefined) && (
        <p class="field-error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
      )}
      <button type="submit" class="primary" disabled={progress !== null || file === null || version.trim() === ''}>
        {progress !== null ? 'Uploading…' : 'Upload'}
      </button>
    </form>
  );
}
