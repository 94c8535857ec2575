import { useState } from 'preact/hooks';
import { actOnFailedRolloutOkms, etagOf, updateRolloutThresholds, VersionConflict, type Rollout, type RolloutThresholds } from '../api/client.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { VersionConflictView } from './version-conflict.tsx';

/** The thresholds as people read them, by the body member that sets each. */
const THRESHOLD_LABELS: Record<keyof RolloutThresholds, string> = {
  success_threshold: 'success threshold',
  error_threshold: 'error threshold',
  update_timeout: 'update timeout',
  auto_advance: 'next group by itself',
};

/** What changed between two versions of a rollout, for the conflict view. */
function rolloutChanges(before: Rollout, after: Rollout): string[] {
  const lines = (Object.keys(THRESHOLD_LABELS) as (keyof RolloutThresholds)[]).filter((key) => before[key] !== after[key]).map((key) => `Set the ${THRESHOLD_LABELS[key]} to ${String(after[key])}`);
  if (before.state !== after.state) lines.push(`It is ${after.state} now (was ${before.state})`);
  return lines.length > 0 ? lines : ['Changed its OKMs or progress (retried or excluded members)'];
}

/**
 * What brings a paused rollout back (docs/rollouts.md): its thresholds changed, its failed OKMs
 * retried or taken out, then Resume, which pauses it again only for failures after it.
 */
export function RolloutRecovery({ rollout, onChanged }: { rollout: Rollout; onChanged: (rollout: Rollout, message: string) => void }) {
  const editable = rollout.state === 'ready' || rollout.state === 'paused';
  const failed = rollout.totals.failed;
  const canActOnFailed = failed > 0 && (rollout.state === 'running' || rollout.state === 'paused');
  if (!editable && !canActOnFailed) return null;
  return (
    <section class="card section" aria-labelledby="rollout-recovery-title" data-testid="rollout-recovery">
      <h2 id="rollout-recovery-title">{rollout.state === 'paused' ? 'Before resuming' : 'Thresholds and failed OKMs'}</h2>
      {rollout.state === 'paused' && (
        <p class="small muted">Resume pauses it again for its error threshold only when an OKM fails after the resume: the failures counted now do not.</p>
      )}
      {canActOnFailed && <FailedActions rollout={rollout} onChanged={onChanged} />}
      {editable && <ThresholdsForm rollout={rollout} onChanged={onChanged} />}
    </section>
  );
}

function FailedActions({ rollout, onChanged }: { rollout: Rollout; onChanged: (rollout: Rollout, message: string) => void }) {
  const failed = rollout.totals.failed;
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const act = async (action: 'retry' | 'exclude') => {
    setBusy(true);
    setError(null);
    try {
      const answer = await actOnFailedRolloutOkms(rollout.id, action);
      onChanged(
        answer.data,
        action === 'retry'
          ? `${failed.toLocaleString()} failed OKM${failed === 1 ? '' : 's'} retried: offered the version again, each with another ${rollout.update_timeout} to update.`
          : `${failed.toLocaleString()} failed OKM${failed === 1 ? '' : 's'} taken out of the rollout: no longer offered its version nor counted.`,
      );
      setConfirming(false);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="recovery-failed">
      <p>
        <strong>{failed.toLocaleString()}</strong> OKM{failed === 1 ? '' : 's'} failed to update.
      </p>
      <div class="page-actions" role="group" aria-label="Failed OKMs">
        <button type="button" disabled={busy} onClick={() => void act('retry')}>
          Retry {failed.toLocaleString()} failed
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
          Exclude {failed.toLocaleString()} failed…
        </button>
      </div>
      {error !== null && (
        <p class="notice notice-warning" role="alert">
          {error}
        </p>
      )}
      {confirming && (
        <ConfirmDialog title={`Exclude ${failed.toLocaleString()} failed OKMs?`} confirmLabel="Exclude" busyLabel="Excluding…" busy={busy} onConfirm={() => void act('exclude')} onCancel={() => setConfirming(false)}>
          <p>
            They leave rollout #{rollout.id}: no longer offered {rollout.version}, no longer counted in their group. They get the fleet latest again and may join a
            later rollout.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}

function ThresholdsForm({ rollout: shown, onChanged }: { rollout: Rollout; onChanged: (rollout: Rollout, message: string) => void }) {
  // The version the edit is made on (the page refreshes `shown`): sent as If-Match, so that a
  // change saved meanwhile by another operator (or the sweep) is shown, never overwritten.
  const [rollout, setRollout] = useState(shown);
  const [conflict, setConflict] = useState<Rollout | null>(null);
  const [success, setSuccess] = useState(String(rollout.success_threshold));
  const [errorThreshold, setErrorThreshold] = useState(String(rollout.error_threshold));
  const [timeout, setTimeoutText] = useState(rollout.update_timeout);
  const [autoAdvance, setAutoAdvance] = useState(rollout.auto_advance);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const percent = (text: string) => (/^\d{1,3}$/.test(text.trim()) && Number(text) <= 100 ? Number(text) : undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    const [successValue, errorValue] = [percent(success), percent(errorThreshold)];
    if (successValue === undefined || errorValue === undefined) return setError('Thresholds are whole percents from 0 to 100.');
    const body: RolloutThresholds = {
      ...(successValue === rollout.success_threshold ? {} : { success_threshold: successValue }),
      ...(errorValue === rollout.error_threshold ? {} : { error_threshold: errorValue }),
      ...(timeout.trim() === rollout.update_timeout ? {} : { update_timeout: timeout.trim() }),
      ...(autoAdvance === rollout.auto_advance ? {} : { auto_advance: autoAdvance }),
    };
    if (Object.keys(body).length === 0) return setError('Nothing changed.');
    setBusy(true);
    setError(null);
    try {
      const saved = (await updateRolloutThresholds(rollout.id, body, etagOf(rollout))).data;
      setRollout(saved);
      onChanged(saved, 'Thresholds saved.');
    } catch (failure) {
      if (failure instanceof VersionConflict && failure.current !== null) setConflict(failure.current as Rollout);
      else setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="form thresholds-form" onSubmit={(event) => void submit(event)} aria-label="Thresholds">
      <h3>Thresholds</h3>
      {conflict !== null && (
        <VersionConflictView
          what="rollout"
          theirs={rolloutChanges(rollout, conflict)}
          yours={[
            ...(success !== String(rollout.success_threshold) ? [`Set the success threshold to ${success}`] : []),
            ...(errorThreshold !== String(rollout.error_threshold) ? [`Set the error threshold to ${errorThreshold}`] : []),
            ...(timeout !== rollout.update_timeout ? [`Set the update timeout to ${timeout}`] : []),
            ...(autoAdvance !== rollout.auto_advance ? [`Set next group by itself to ${String(autoAdvance)}`] : []),
          ]}
          onMerge={() => {
            // Yours stay typed; the fields you left take their values, and the save is based on their version.
            if (success === String(rollout.success_threshold)) setSuccess(String(conflict.success_threshold));
            if (errorThreshold === String(rollout.error_threshold)) setErrorThreshold(String(conflict.error_threshold));
            if (timeout === rollout.update_timeout) setTimeoutText(conflict.update_timeout);
            if (autoAdvance === rollout.auto_advance) setAutoAdvance(conflict.auto_advance);
            setRollout(conflict);
            setConflict(null);
          }}
          onReload={() => {
            setSuccess(String(conflict.success_threshold));
            setErrorThreshold(String(conflict.error_threshold));
            setTimeoutText(conflict.update_timeout);
            setAutoAdvance(conflict.auto_advance);
            setRollout(conflict);
            setConflict(null);
            onChanged(conflict, 'Reloaded: the thresholds are the other operator\'s.');
          }}
        />
      )}
      <div class="form-grid">
        <div class="field">
          <label for="rollout-success-threshold">Success threshold (%)</label>
          <input id="rollout-success-threshold" type="number" min={0} max={100} value={success} onInput={(event) => setSuccess(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="rollout-error-threshold">Error threshold (%)</label>
          <input id="rollout-error-threshold" type="number" min={0} max={100} value={errorThreshold} onInput={(event) => setErrorThreshold(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="rollout-update-timeout">Update timeout</label>
          <input id="rollout-update-timeout" type="text" value={timeout} placeholder="1h" aria-describedby="rollout-update-timeout-hint" onInput={(event) => setTimeoutText(event.currentTarget.value)} />
          <p class="field-hint" id="rollout-update-timeout-hint">
            30m, 1h, 2d…
          </p>
        </div>
        <label class="checkbox">
          <input type="checkbox" checked={autoAdvance} onChange={(event) => setAutoAdvance(event.currentTarget.checked)} /> Start the next group by itself
        </label>
      </div>
      {error !== null && (
        <p class="notice notice-warning" role="alert">
          {error}
        </p>
      )}
      <div class="page-actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save thresholds'}
        </button>
      </div>
    </form>
  );
}
