import { useState } from 'preact/hooks';
import { getFleetSummary, listFirmware, setLatestFirmware, VersionConflict, type FirmwareKind, type FirmwareRelease } from '../api/client.ts';
import { FIRMWARE_KIND_LABELS, FIRMWARE_KINDS } from '../components/firmware-kind-field.tsx';
import { FirmwareLatestDialog } from '../components/firmware-latest-dialog.tsx';
import { FirmwareUploadForm } from '../components/firmware-upload-form.tsx';
import { FirmwareUrlForm } from '../components/firmware-url-form.tsx';
import { PageHeader } from '../components/layout.tsx';
import { LocalTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { byteSize, firmwareRows } from '../firmware-rows.ts';
import { useSession } from '../session.ts';

/** The firmware catalog per kind, the fleet-wide latest of each, and how many OKMs run each version. */
export function FirmwarePage() {
  const session = useSession()!;
  const isAdmin = session.claims.isAdmin;
  const catalog = useResource(() => Promise.all([listFirmware(), getFleetSummary()]), []);
  const [notice, setNotice] = useState<string | null>(null);
  const [latestError, setLatestError] = useState<{ kind: FirmwareKind; message: string } | null>(null);
  /** The fleet-latest change waiting for its confirmation (it changes every customer's fleet). */
  const [confirming, setConfirming] = useState<{ kind: FirmwareKind; version: string | null } | null>(null);
  const [saving, setSaving] = useState(false);

  const added = (release: FirmwareRelease) => {
    setNotice(`Release ${release.version} (${FIRMWARE_KIND_LABELS[release.kind]}) added. Make it the fleet latest to offer it to every OKM.`);
    catalog.reload();
  };
  const makeLatest = async (kind: FirmwareKind, version: string | null, basedOn: string | null) => {
    setLatestError(null);
    setSaving(true);
    try {
      // Based on the counts confirmed (If-Match): another operator's change since is a 412, not overwritten.
      await setLatestFirmware(kind, version, basedOn);
      setNotice(version === null ? `${FIRMWARE_KIND_LABELS[kind]}: no fleet latest now.` : `${FIRMWARE_KIND_LABELS[kind]}: ${version} is the fleet latest; OKMs on older versions are offered it on their next poll.`);
      catalog.reload();
    } catch (failure) {
      if (failure instanceof VersionConflict) {
        const current = (failure.current as { version: string | null } | null)?.version ?? null;
        setLatestError({ kind, message: `Nothing was changed: another operator changed the fleet latest since your confirmation (it is ${current ?? 'none'} now). Look again, then choose.` });
        catalog.reload();
        return;
      }
      setLatestError({ kind, message: failure instanceof Error ? failure.message : String(failure) });
    } finally {
      setSaving(false);
      setConfirming(null);
    }
  };

  return (
    <section>
      <PageHeader title="Firmware" />
      {notice !== null && (
        <p class="notice notice-ok" role="status">
          {notice}
        </p>
      )}
      {catalog.error !== undefined && catalog.data === undefined ? (
        <ErrorState error={catalog.error} retry={catalog.reload} />
      ) : catalog.data === undefined ? (
        <Loading what="Loading the firmware catalog" />
      ) : (
        FIRMWARE_KINDS.map((kind) => {
          const [releases, summary] = catalog.data!;
          const latest = releases.latest[kind];
          const rows = firmwareRows(
            releases.data.filter((release) => release.kind === kind),
            summary.data.firmware[kind],
            latest,
          );
          const headingId = `firmware-${kind}`;
          return (
            <section key={kind} class="card section firmware-kind" aria-labelledby={headingId}>
              <div class="firmware-kind-head">
                <h2 id={headingId}>{FIRMWARE_KIND_LABELS[kind]}</h2>
                <span>
                  Fleet latest: <strong data-testid={`latest-${kind}`}>{latest ?? 'none'}</strong>
                  {isAdmin && latest !== null && (
                    <button type="button" class="small-button" onClick={() => setConfirming({ kind, version: null })} aria-label={`Clear the fleet latest ${FIRMWARE_KIND_LABELS[kind]}…`}>
                      Clear…
                    </button>
                  )}
                </span>
              </div>
              {latestError?.kind === kind && (
                <p class="field-error" role="alert">
                  {latestError.message}
                </p>
              )}
              {rows.length === 0 ? (
                <Empty>No releases, and no OKM has reported a version.</Empty>
              ) : (
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">Version</th>
                        <th scope="col" class="num">OKMs running it</th>
                        <th scope="col">Source</th>
                        <th scope="col" class="num hide-narrow">Size</th>
                        <th scope="col" class="hide-narrow">SHA-256</th>
                        <th scope="col">Added</th>
                        {isAdmin && <th scope="col">Fleet latest</th>}
                      </tr>
                    </thead>
                    <tbody>
                      {rows.map((row) => (
                        <tr key={row.version} class={row.isLatest ? 'firmware-latest' : undefined}>
                          <th scope="row">
                            {row.version} {row.isLatest && <span class="badge badge-in-step">latest</span>}
                          </th>
                          <td class="num">{row.okms.toLocaleString()}</td>
                          <td>
                            {row.release === null ? (
                              <span class="muted">not in the catalog</span>
                            ) : row.release.source === 'file' ? (
                              'uploaded file'
                            ) : (
                              <a href={row.release.url} rel="noreferrer" title={row.release.url}>
                                URL
                              </a>
                            )}
                          </td>
                          <td class="num hide-narrow">{row.release?.size == null ? '—' : byteSize(row.release.size)}</td>
                          <td class="mono hide-narrow" title={row.release?.sha256}>
                            {row.release === null ? '—' : `${row.release.sha256.slice(0, 12)}…`}
                          </td>
                          <td>{row.release === null ? '—' : <LocalTime value={row.release.created_at} />}</td>
                          {isAdmin && (
                            <td>
                              {row.release !== null && !row.isLatest && (
                                <button type="button" class="small-button" onClick={() => setConfirming({ kind, version: row.version })} aria-label={`Make ${row.version} the fleet latest ${FIRMWARE_KIND_LABELS[kind]}…`}>
                                  Make latest…
                                </button>
                              )}
                            </td>
                          )}
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
            </section>
          );
        })
      )}
      {confirming !== null && (
        <FirmwareLatestDialog
          kind={confirming.kind}
          version={confirming.version}
          saving={saving}
          onConfirm={(basedOn) => void makeLatest(confirming.kind, confirming.version, basedOn)}
          onCancel={() => setConfirming(null)}
        />
      )}
      {isAdmin && (
        <div class="cards">
          <FirmwareUploadForm onAdded={added} />
          <FirmwareUrlForm onAdded={added} />
        </div>
      )}
    </section>
  );
}
