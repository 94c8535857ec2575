import { okmShownState, STATE_LABELS, stuckReason, type OkmState, type StuckOkm } from '../format.ts';

type BadgeKind = keyof typeof STATE_LABELS;

export function Badge({ kind, label = STATE_LABELS[kind], title }: { kind: BadgeKind; label?: string; title?: string }) {
  return (
    <span class={`badge badge-${kind.replace('_', '-')}`} title={title}>
      {label}
    </span>
  );
}

/**
 * An OKM's state as the fleet summary counts it (as of its last poll), and "Overdue" beside it
 * when it has stopped polling, "Stuck" when it does not take a correction. Given `next`, what
 * the next poll is expected to send (the drift report's or the list's), an OKM in step at its
 * last poll with a correction due says so.
 */
export function OkmStateBadge({
  okm,
  next,
}: {
  okm: { state: OkmState; last_correction: string | null; overdue: boolean; stuck: StuckOkm | null };
  next?: string | null;
}) {
  const state = okmShownState(okm, next);
  const title =
    state === 'drifting'
      ? `the last poll sent ${okm.last_correction}${next ? `; the next poll sends ${next}` : ''}`
      : state === 'due'
        ? `in step at its last poll, configured since: the next poll sends ${next}`
        : undefined;
  return (
    <span class="badges">
      <Badge kind={state} title={title} />
      {okm.overdue && <Badge kind="overdue" title="polled before, but not for 3 × its polling interval" />}
      {okm.stuck && <Badge kind="stuck" title={stuckReason(okm.stuck, Date.now())} />}
    </span>
  );
}
