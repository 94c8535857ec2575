import { useState } from 'preact/hooks';

/** Saves a file fetched with the session's credential under `fileName`, as a download link would. */
export function saveFile(file: Blob, fileName: string): void {
  const url = URL.createObjectURL(file);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * A button that downloads a CSV export: the file is fetched with the session's credential (a
 * bearer token cannot ride on a plain link) and then saved under `fileName`. The export streams
 * on the server; the browser holds the file once it has arrived.
 */
export function CsvDownload({ label, fileName, fetchFile, testId }: { label: string; fileName: string; fetchFile: () => Promise<Blob>; testId?: string }) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const download = async () => {
    setBusy(true);
    setFailure(null);
    try {
      saveFile(await fetchFile(), fileName);
    } catch (error) {
      setFailure(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" data-testid={testId} disabled={busy} onClick={() => void download()}>
        {busy ? 'Preparing CSV…' : label}
      </button>
      {failure !== null && (
        <span class="field-error" role="alert">
          The download failed: {failure}
        </span>
      )}
    </>
  );
}

/** A file name with today's date, as the server names its exports. */
export const csvFileName = (what: string, now = Date.now()) => `keyfleet-${what}-${new Date(now).toISOString().slice(0, 10)}.csv`;
