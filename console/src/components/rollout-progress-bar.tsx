import { memberCount, percentOf, progressShares, type MemberCounts } from '../rollout-progress.ts';

/**
 * How far a group (or a whole rollout) has come: updated, failed and offered members as
 * segments of one bar, the updated share as the progressbar's value, and the counts in words.
 */
export function RolloutProgressBar({ label, counts, compact = false }: { label: string; counts: MemberCounts; compact?: boolean }) {
  const shares = progressShares(counts);
  const total = memberCount(counts);
  return (
    <div class={`rollout-progress${compact ? ' compact' : ''}`}>
      <div
        class="progress-track"
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percentOf(counts.updated, total)}
        aria-valuetext={shares.summary}
        title={`${shares.summary}; ${counts.offered.toLocaleString('en')} offered, ${counts.scheduled.toLocaleString('en')} not offered yet, ${counts.blocked.toLocaleString('en')} blocked, ${counts.silent.toLocaleString('en')} silent`}
      >
        <span class="progress-updated" style={{ width: `${shares.updated}%` }} />
        <span class="progress-failed" style={{ width: `${shares.failed}%` }} />
        <span class="progress-offered" style={{ width: `${shares.offered}%` }} />
      </div>
      {!compact && <span class="progress-summary">{shares.summary}</span>}
    </div>
  );
}
