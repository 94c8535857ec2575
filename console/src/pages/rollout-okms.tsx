import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { actOnFailedRolloutOkms, fetchRolloutOkmsCsv, getRollout, listRolloutOkms } from '../api/client.ts';
import { CsvDownload, csvFileName } from '../components/csv-download.tsx';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { FIRMWARE_KIND_LABELS } from '../components/firmware-kind-field.tsx';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { LocalTime, RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { okmHref } from '../paths.ts';
import { rolloutHref, rolloutOkmsHref, type RolloutOkmState } from '../rollout-paths.ts';
import { ROLLOUT_REFRESH_MS } from './rollouts.tsx';

const OKMS_PER_PAGE = 50;

/** The states in the order the rollout's page counts them, as words. */
export const ROLLOUT_OKM_STATES: { state: RolloutOkmState; label: string }[] = [
  { state: 'updated', label: 'Updated' },
  { state: 'offered', label: 'Offered' },
  { state: 'failed', label: 'Failed' },
  { state: 'scheduled', label: 'Not offered yet' },
  { state: 'blocked', label: 'Blocked' },
  { state: 'silent', label: 'Silent' },
];
const stateOf = (value: string | undefined) => ROLLOUT_OKM_STATES.find((entry) => entry.state === value);
const groupOf = (value: string | undefined) => (value !== undefined && /^[0-9]{1,2}$/.test(value) ? Number(value) : undefined);

/**
 * The OKMs behind a rollout's counts: of one state and one group when the URL says so (each
 * count on the rollout's page links here), by serial number, with the time each was offered the
 * version and its last poll, paged by the server's cursors.
 */
export function RolloutOkmsPage() {
  const { params } = useRoute();
  const location = useLocation();
  const id = Number(params.id);
  const valid = Number.isInteger(id) && id >= 1;
  const state = stateOf(location.query.state)?.state;
  const group = groupOf(location.query.group);
  const scope = `${id}/${state ?? ''}/${group ?? ''}`;
  const pages = useCursorPages(scope);
  const rollout = useResource(() => (valid ? getRollout(id) : Promise.reject(new Error(`“${params.id}” is not a rollout number.`))), [id]);
  const okms = useResource(
    () => (valid ? listRolloutOkms(id, { limit: OKMS_PER_PAGE, ...(pages.cursor === undefined ? {} : { cursor: pages.cursor }), ...(state === undefined ? {} : { state }), ...(group === undefined ? {} : { group }) }) : Promise.reject(new Error('no rollout'))),
    [scope, pages.cursor],
    ROLLOUT_REFRESH_MS,
  );
  const shown = rollout.data?.data;
  const go = (next: { state?: RolloutOkmState; group?: number }) => location.route(rolloutOkmsHref(id, next));
  const title = `${stateOf(state)?.label ?? 'All'} OKMs${group === undefined ? '' : ` of group ${group + 1}`}`;
  const [notice, setNotice] = useState<string | null>(null);

  return (
    <section>
      <PageHeader title={<>Rollout #{valid ? id : params.id}: {title}</>}>
        {valid && (
          <CsvDownload
            label="Download CSV"
            testId="rollout-okms-csv"
            fileName={csvFileName(`rollout-${id}-okms`)}
            fetchFile={() => fetchRolloutOkmsCsv(id, { ...(state === undefined ? {} : { state }), ...(group === undefined ? {} : { group }) })}
          />
        )}
        {valid && <a href={rolloutHref(id)}>Back to the rollout</a>}
      </PageHeader>
      {shown !== undefined && (
        <p>
          {FIRMWARE_KIND_LABELS[shown.kind]} <strong>{shown.version}</strong> for {shown.customer ?? 'every customer'}
        </p>
      )}
      <form class="filters" aria-label="Filter the rollout's OKMs" onSubmit={(event) => event.preventDefault()}>
        <div class="field">
          <label for="rollout-okm-state">State</label>
          <select id="rollout-okm-state" value={state ?? ''} onChange={(event) => go({ state: stateOf(event.currentTarget.value)?.state, group })}>
            <option value="">Any</option>
            {ROLLOUT_OKM_STATES.map((entry) => (
              <option key={entry.state} value={entry.state}>
                {entry.label}
                {shown === undefined ? '' : ` (${(group === undefined ? shown.totals : (shown.groups[group]?.counts ?? shown.totals))[entry.state].toLocaleString()})`}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="rollout-okm-group">Group</label>
          <select id="rollout-okm-group" value={group === undefined ? '' : String(group)} onChange={(event) => go({ state, group: groupOf(event.currentTarget.value) })}>
            <option value="">Every group</option>
            {(shown?.groups ?? (group === undefined ? [] : [undefined])).map((entry, index) => (
              <option key={index} value={String(index)}>
                Group {index + 1}
                {entry === undefined ? '' : ` (up to ${entry.percent} %)`}
              </option>
            ))}
          </select>
        </div>
      </form>
      {notice !== null && (
        <p class="notice notice-ok" role="status">
          {notice}
        </p>
      )}
      {state === 'silent' && (
        <p class="muted small">
          Silent: not offered the version yet, and no poll since its group started: the OKM may be off line. One that has not yet had one polling interval since its group started
          is waiting for its first poll.
        </p>
      )}
      {state === 'blocked' && (
        <p class="muted small">
          Blocked: the OKM polls, but it is stuck on an earlier correction (sent on several polls in a row without effect), so the version is never offered. Each counts as failed once the
          update timeout has passed since its group started. Its page shows what it reports against what it is told.
        </p>
      )}
      {okms.error !== undefined && <ErrorState error={okms.error} retry={okms.reload} />}
      {okms.data === undefined && okms.error === undefined && <Loading what="Loading the rollout's OKMs" />}
      {okms.data !== undefined && okms.error === undefined && (
        okms.data.data.length === 0 ? (
          <>
            <Empty>{pages.before > 0 ? 'No more OKMs.' : 'No OKM of the rollout is in this state.'}</Empty>
            <Pager pages={pages} nextCursor={null} noun="OKMs" />
          </>
        ) : (
          <>
            <div class="table-wrap" aria-busy={okms.loading}>
              <table data-testid="rollout-okm-list">
                <thead>
                  <tr>
                    <th scope="col">Serial number</th>
                    <th scope="col">Group</th>
                    <th scope="col">State</th>
                    <th scope="col">Offered</th>
                    <th scope="col">Last poll</th>
                    <th scope="col">Reports</th>
                  </tr>
                </thead>
                <tbody>
                  {okms.data.data.map((okm) => {
                    const entry = stateOf(okm.state)!;
                    return (
                      <tr key={okm.serial_number}>
                        <td>
                          <a class="mono" href={okmHref(okm.serial_number)}>
                            {okm.serial_number}
                          </a>
                        </td>
                        <td class="num">{okm.group + 1}</td>
                        <td>
                          {entry.state === 'silent' && okm.first_poll_due_at !== null && Date.parse(okm.first_poll_due_at) > Date.now() ? (
                            <span class="badge badge-member-scheduled" title="its group started less than one polling interval ago: it has missed no poll yet">
                              Waiting for first poll
                            </span>
                          ) : (
                            <span class={`badge badge-member-${entry.state}`}>{entry.label}</span>
                          )}
                          {entry.state === 'failed' && shown !== undefined && (shown.state === 'running' || shown.state === 'paused') && (
                            <FailedOkmActions rolloutId={id} serial={okm.serial_number} onDone={(message) => { setNotice(message); okms.reload(); rollout.reload(); }} />
                          )}
                          {okm.blocked_by !== null && (
                            <span class="small" data-testid="blocked-by">
                              {' '}
                              by <code>{okm.blocked_by}</code>
                            </span>
                          )}
                        </td>
                        <td>{okm.offered_at === null ? <span class="muted">not yet</span> : <LocalTime value={okm.offered_at} />}</td>
                        <td>
                          <RelativeTime value={okm.last_sync_time} never="never" />
                        </td>
                        <td class="mono">{okm.reported_version ?? <span class="muted">—</span>}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} nextCursor={okms.data.next_cursor} noun="OKMs" />
          </>
        )
      )}
    </section>
  );
}

/** Retry or exclude one failed OKM of a running or paused rollout. */
function FailedOkmActions({ rolloutId, serial, onDone }: { rolloutId: number; serial: string; onDone: (message: string) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (action: 'retry' | 'exclude') => {
    setBusy(true);
    setError(null);
    try {
      await actOnFailedRolloutOkms(rolloutId, action, [serial]);
      setConfirming(false);
      onDone(action === 'retry' ? `${serial} retried: offered the version again.` : `${serial} taken out of the rollout.`);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="row-actions">
      {' '}
      <button type="button" class="small-button" disabled={busy} onClick={() => void act('retry')} aria-label={`Retry ${serial}`}>
        Retry
      </button>{' '}
      <button type="button" class="small-button danger" disabled={busy} onClick={() => setConfirming(true)} aria-label={`Exclude ${serial}`}>
        Exclude…
      </button>
      {error !== null && (
        <span class="bad small" role="alert">
          {' '}
          {error}
        </span>
      )}
      {confirming && (
        <ConfirmDialog title={`Exclude ${serial}?`} confirmLabel="Exclude" busyLabel="Excluding…" busy={busy} onConfirm={() => void act('exclude')} onCancel={() => setConfirming(false)}>
          <p>It leaves rollout #{rolloutId}: no longer offered its version nor counted; it gets the fleet latest again.</p>
        </ConfirmDialog>
      )}
    </span>
  );
}
