import { useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { actOnRollout, etagOf, getRollout, VersionConflict, type Rollout } from '../api/client.ts';
import { FIRMWARE_KIND_LABELS } from '../components/firmware-kind-field.tsx';
import { EntityHistory } from '../components/entity-history.tsx';
import { PageHeader } from '../components/layout.tsx';
import { LocalTime, RelativeTime } from '../components/relative-time.tsx';
import { RolloutConfirmDialog } from '../components/rollout-confirm-dialog.tsx';
import { RolloutProgressBar } from '../components/rollout-progress-bar.tsx';
import { RolloutRecovery } from '../components/rollout-recovery.tsx';
import { RolloutStateBadge } from '../components/rollout-state-badge.tsx';
import { ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { rolloutOkmsHref, type RolloutOkmState } from '../rollout-paths.ts';
import { availableActions, type MemberCounts, type RolloutAction } from '../rollout-progress.ts';
import { ROLLOUT_REFRESH_MS } from './rollouts.tsx';

const ACTION_LABELS: Record<RolloutAction, string> = {
  approve: 'Approve',
  start: 'Start',
  pause: 'Pause…',
  resume: 'Resume',
  advance: 'Start next group now',
  abort: 'Abort…',
};

const DONE: Record<RolloutAction, string> = {
  approve: 'Approved: it can be started now.',
  start: 'Started: group 1 is offered the version from each OKM’s next poll on.',
  pause: 'Paused: no OKM is offered the version until it resumes.',
  resume: 'Resumed.',
  advance: 'The next group was started.',
  abort: 'Aborted: no OKM that has not updated is offered the version any more.',
};

const GROUP_STATES = { waiting: 'not started', running: 'running', paused: 'paused', completed: 'completed', aborted: 'aborted' } as const;

/** The counts a group (or the rollout) shows, in this order, each in words. */
const COUNT_WORDS: [RolloutOkmState, string][] = [
  ['updated', 'updated'],
  ['offered', 'offered'],
  ['failed', 'failed'],
  ['scheduled', 'not offered yet'],
  ['blocked', 'blocked (stuck on an earlier correction)'],
  ['silent', 'silent (no poll since the group started)'],
];

/**
 * Every count a link to the rollout's OKMs it counts (of the group, when one is given). Until one
 * polling interval has passed since a group started (`waitingUntil`), its OKMs with no poll yet
 * have missed none: they are waiting for their first poll, not silent.
 */
function CountLinks({ rolloutId, group, counts, waitingUntil }: { rolloutId: number; group?: number; counts: MemberCounts; waitingUntil?: string | null }) {
  const waiting = waitingUntil !== undefined && waitingUntil !== null && Date.parse(waitingUntil) > Date.now();
  return (
    <p class="small group-counts" data-testid={group === undefined ? 'rollout-counts' : `group-counts-${group}`}>
      {COUNT_WORDS.map(([state, words], index) => (
        <span key={state}>
          {index > 0 && <span class="muted"> · </span>}
          <a href={rolloutOkmsHref(rolloutId, { state, ...(group === undefined ? {} : { group }) })} data-state={state}>
            {counts[state].toLocaleString()} {state === 'silent' && waiting ? 'waiting for their first poll' : words}
          </a>
        </span>
      ))}
    </p>
  );
}

/** One rollout: its settings, a live progress bar per group, and the actions its state allows. */
export function RolloutDetailPage() {
  const { params } = useRoute();
  const id = Number(params.id);
  const valid = Number.isInteger(id) && id >= 1;
  const rollout = useResource(() => (valid ? getRollout(id) : Promise.reject(new Error(`“${params.id}” is not a rollout number.`))), [id], valid ? ROLLOUT_REFRESH_MS : undefined);
  const [shown, setShown] = useState<Rollout | undefined>(undefined);
  const [confirming, setConfirming] = useState<'pause' | 'abort' | null>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const [updatedAt, setUpdatedAt] = useState<string | null>(null);
  useEffect(() => {
    if (rollout.data) {
      setShown(rollout.data.data);
      setUpdatedAt(new Date().toISOString());
    }
  }, [rollout.data]);

  const act = async (action: RolloutAction) => {
    setBusy(true);
    setOutcome(null);
    try {
      // The actions that move a rollout on are based on what the page shows (If-Match): an advance
      // the sweep made meanwhile is not repeated. Pause and abort stop it whatever changed.
      const basedOn = action === 'pause' || action === 'abort' ? undefined : etagOf(shown);
      setShown((await actOnRollout(id, action, basedOn)).data);
      setOutcome({ ok: true, text: DONE[action] });
      setConfirming(null);
      rollout.reload();
    } catch (failure) {
      if (failure instanceof VersionConflict && failure.current !== null) {
        const current = failure.current as Rollout;
        setShown(current);
        setOutcome({ ok: false, text: `Nothing was done: the rollout changed since this page showed it (it is ${current.state} now, group ${current.current_group ?? 'none'}). The page shows it as it is; check and try again.` });
        setConfirming(null);
        return;
      }
      setOutcome({ ok: false, text: failure instanceof Error ? failure.message : String(failure) });
      setConfirming(null);
    } finally {
      setBusy(false);
    }
  };

  if (shown === undefined) {
    return rollout.error !== undefined ? <ErrorState error={rollout.error} retry={rollout.reload} /> : <Loading what="Loading the rollout" />;
  }
  const name = `Rollout #${shown.id}: ${FIRMWARE_KIND_LABELS[shown.kind]} ${shown.version}`;
  const actions = availableActions(shown);
  return (
    <section>
      <PageHeader
        title={
          <>
            Rollout #{shown.id} <RolloutStateBadge state={shown.state} reason={shown.state_reason} />
          </>
        }
      >
        <a href={href('/rollouts')}>All rollouts</a>
        <span class="muted small" aria-live="polite">
          {rollout.loading ? 'Refreshing…' : updatedAt === null ? '' : <>Updated <RelativeTime value={updatedAt} /></>}
        </span>
      </PageHeader>
      <p>
        {FIRMWARE_KIND_LABELS[shown.kind]} <strong>{shown.version}</strong> for {shown.customer ?? 'every customer'}
        {shown.state_reason !== null && <span class="muted"> — {stateSentence(shown)}</span>}
      </p>
      {rollout.error !== undefined && <ErrorState error={rollout.error} retry={rollout.reload} />}
      {outcome !== null && (
        <p class={`notice ${outcome.ok ? 'notice-ok' : 'notice-warning'}`} role={outcome.ok ? 'status' : 'alert'}>
          {outcome.text}
        </p>
      )}
      {shown.approval_required && shown.approved_at === null && shown.state === 'ready' && (
        <p class="notice notice-warning">It needs the approval of an operator other than {shown.created_by} before it can start.</p>
      )}
      {actions.length > 0 && (
        <div class="page-actions rollout-actions" role="group" aria-label="Rollout actions">
          {actions.map((action) => (
            <button
              key={action}
              type="button"
              class={action === 'abort' ? 'danger' : action === 'start' || action === 'resume' || action === 'approve' ? 'primary' : undefined}
              disabled={busy}
              onClick={() => (action === 'pause' || action === 'abort' ? setConfirming(action) : void act(action))}
            >
              {ACTION_LABELS[action]}
            </button>
          ))}
        </div>
      )}
      <RolloutRecovery
        key={`${shown.state}:${shown.updated_at}`}
        rollout={shown}
        onChanged={(changed, message) => {
          setShown(changed);
          setOutcome({ ok: true, text: message });
          rollout.reload();
        }}
      />
      <div class="cards wide-left">
        <section class="card" aria-labelledby="rollout-groups-title">
          <h2 id="rollout-groups-title">Groups</h2>
          <p class="progress-legend small" aria-hidden="true">
            <span class="swatch progress-updated" /> updated <span class="swatch progress-failed" /> failed <span class="swatch progress-offered" /> offered, not updated yet
          </p>
          <ol class="group-list">
            {shown.groups.map((group, index) => (
              <li key={index} class={`group-${group.state}`}>
                <div class="group-head">
                  <strong>Group {index + 1}</strong>
                  <span class="muted">
                    up to {group.percent} % · {group.okms.toLocaleString()} OKMs · {GROUP_STATES[group.state]}
                  </span>
                </div>
                <RolloutProgressBar label={`Group ${index + 1}`} counts={group.counts} />
                <CountLinks rolloutId={shown.id} group={index} counts={group.counts} waitingUntil={group.first_polls_by} />
              </li>
            ))}
          </ol>
          <h3>All groups</h3>
          <RolloutProgressBar label="All groups" counts={shown.totals} />
          <CountLinks rolloutId={shown.id} counts={shown.totals} waitingUntil={latestFirstPolls(shown)} />
          <p class="small">
            <a href={rolloutOkmsHref(shown.id)}>Every OKM of the rollout</a>
          </p>
        </section>
        <section class="card" aria-labelledby="rollout-settings-title">
          <h2 id="rollout-settings-title">Settings</h2>
          <dl class="kv">
            <dt>Success threshold</dt>
            <dd>{shown.success_threshold} % of a group updated</dd>
            <dt>Error threshold</dt>
            <dd>pauses above {shown.error_threshold} % failed</dd>
            <dt>Update timeout</dt>
            <dd>{shown.update_timeout}</dd>
            <dt>Next group</dt>
            <dd>{shown.auto_advance ? 'starts by itself when a group passes' : 'started by hand'}</dd>
            <dt>Only OKMs</dt>
            <dd>{filterSentence(shown.filter)}</dd>
            <dt>Maintenance window</dt>
            <dd>{shown.maintenance_window === null ? 'none: any time' : `${shown.maintenance_window.from}–${shown.maintenance_window.to} (${shown.maintenance_window.time_zone})`}</dd>
            <dt>Retry policy</dt>
            <dd>{retryPolicySentence(shown.retry_policy)}</dd>
            <dt>Starts by itself</dt>
            <dd>{shown.start_at === null ? 'no' : <LocalTime value={shown.start_at} />}</dd>
            <dt>Approval</dt>
            <dd>
              {!shown.approval_required ? (
                'not required'
              ) : shown.approved_at === null ? (
                'waiting'
              ) : (
                <>
                  by {shown.approved_by}, <LocalTime value={shown.approved_at} />
                </>
              )}
            </dd>
            <dt>Created</dt>
            <dd>
              by {shown.created_by}, <LocalTime value={shown.created_at} />
            </dd>
            <dt>Started</dt>
            <dd>
              <LocalTime value={shown.started_at} />
            </dd>
            <dt>Ended</dt>
            <dd>
              <LocalTime value={shown.finished_at} />
            </dd>
          </dl>
        </section>
      </div>
      {/* A step (an operator's, or the rollout's own at its thresholds or schedule) changes these, and then its history. */}
      <EntityHistory type="rollout" id={String(shown.id)} version={`${shown.state}:${shown.approved_at}:${shown.groups.map((group) => group.state).join()}`} />
      {confirming !== null && (
        <RolloutConfirmDialog action={confirming} rolloutName={name} busy={busy} onConfirm={() => void act(confirming)} onCancel={() => setConfirming(null)} />
      )}
    </section>
  );
}

/** For the rollout's totals: until when every started group's OKMs are still within their first polling interval; null before the start. */
function latestFirstPolls(rollout: Rollout): string | null {
  const times = rollout.groups.flatMap((group) => (group.first_polls_by === null ? [] : [group.first_polls_by]));
  if (times.length === 0) return null;
  // Waiting only while every started group is: the earliest such time decides.
  return times.reduce((earliest, time) => (Date.parse(time) < Date.parse(earliest) ? time : earliest));
}

const REASONS: Record<string, string> = {
  operator: 'by an operator',
  resumed: 'resumed by an operator',
  start_at: 'started by itself at its start time',
  error_threshold: 'paused by itself: too many OKMs of a group failed to update',
  success_threshold: 'the last group passed its success threshold',
};

/** Why the rollout is in its state, in words (the API's reason as is when it is a new one). */
function stateSentence(rollout: Rollout): string {
  const reason = rollout.state_reason ?? '';
  return reason === 'operator' ? `${rollout.state === 'running' ? 'started' : rollout.state} by an operator` : (REASONS[reason] ?? reason);
}

/** The rollout's own retry policy of its offers, in words; without one, whose applies. */
function retryPolicySentence(policy: Rollout['retry_policy']): string {
  if (policy === null) return 'the customer’s, else the fleet default';
  if (policy.offers === 0) return 'never held back (strict seed order)';
  return `${policy.offers} offer${policy.offers === 1 ? '' : 's'} not taken, then held back ${policy.backoff_polls.join(', ')} polls (at most ${policy.max_backoff_polls})`;
}

function filterSentence(filter: Rollout['filter']): string {
  if (filter === null) return 'all of its customer’s';
  const parts = [];
  if (filter.firmware_version !== undefined) parts.push(`reporting ${filter.firmware_version}`);
  if (filter.serial_numbers !== undefined) parts.push(`${filter.serial_numbers.length.toLocaleString()} serial numbers named`);
  return parts.join(', ');
}
