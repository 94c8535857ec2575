import { okmShownState, STATE_LABELS, stuckReason, type OkmState, type StuckOkm } from '../format.ts';

type BadgeKind = keyof typeof STATE_LABELS;

export function Badge({ kind, label = STATE_LABELS[kind], title }: { kind: BadgeKind; label?: string; title?: string }) {
  return (
    <span class={`badge badge-${kind.replace('_', '-')}`} title={title}>
      {label}
    </span>
  );
}

/** The one state the server gives an OKM to show (src/okm/fleet-states.ts summaryStateOf). */
export type OkmSummaryState = 'never_polled' | 'overdue' | 'stuck' | 'drifting' | 'in_step';

/**
 * One badge per OKM: the server's one state to show (never polled, overdue, stuck, drifting, in
 * step: the first that applies, so a stuck OKM answered {} while its offer is held back reads
 * Stuck, not In step). Given `next`, what the next poll is expected to send, an OKM in step
 * with a correction due says so. The badge's title names what else applies.
 */
export function OkmStateBadge({
  okm,
  next,
}: {
  okm: { state: OkmState; summary_state: OkmSummaryState; last_correction: string | null; overdue: boolean; stuck: StuckOkm | null };
  next?: string | null;
}) {
  const summary = okm.summary_state;
  const kind = summary === 'in_step' || summary === 'drifting' || summary === 'never_polled' ? okmShownState({ state: summary }, next) : summary;
  const notes = [
    okm.overdue && 'overdue: polled before, but not for 3 × its polling interval',
    okm.stuck && `stuck: ${stuckReason(okm.stuck, Date.now())}`,
    okm.state === 'drifting' && `the last poll sent ${okm.last_correction}`,
    okm.state === 'in_step' && summary !== 'in_step' && 'its last poll was answered {}',
    next && `the next poll sends ${next}`,
  ].filter((note): note is string => typeof note === 'string');
  return (
    <span class="badges">
      <Badge kind={kind} title={notes.length === 0 ? undefined : notes.join('; ')} />
    </span>
  );
}
