import type { RolloutState } from '../rollout-progress.ts';

const LABELS: Record<RolloutState, string> = { ready: 'Ready', running: 'Running', paused: 'Paused', finished: 'Finished', aborted: 'Aborted' };

/** A rollout's state; its reason (why it paused, finished or was aborted) on hover. */
export function RolloutStateBadge({ state, reason }: { state: RolloutState; reason?: string | null }) {
  return (
    <span class={`badge badge-rollout-${state}`} title={reason ? `${LABELS[state]}: ${reason}` : undefined}>
      {LABELS[state]}
    </span>
  );
}
