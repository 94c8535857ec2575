import { okmState, STATE_LABELS } from '../format.ts';

type BadgeKind = keyof typeof STATE_LABELS;

export function Badge({ kind, label = STATE_LABELS[kind], title }: { kind: BadgeKind; label?: string; title?: string }) {
  return (
    <span class={`badge badge-${kind.replace('_', '-')}`} title={title}>
      {label}
    </span>
  );
}

/** An OKM's state as the fleet summary counts it, and "Overdue" beside it when it has stopped polling. */
export function OkmStateBadge({ okm }: { okm: { last_sync_time: string | null; last_correction: string | null; overdue: boolean } }) {
  const state = okmState(okm);
  return (
    <span class="badges">
      <Badge kind={state} title={state === 'drifting' ? `last poll corrected by ${okm.last_correction}` : undefined} />
      {okm.overdue && <Badge kind="overdue" title="polled before, but not for 3 × its polling interval" />}
    </span>
  );
}
