/**
 * Pure helpers of the rollout pages: the group percents an operator types, how far a group
 * or a rollout has come, and which actions its state allows.
 */

/** Member counts of a group or of a whole rollout, as the API gives them. */
export interface MemberCounts {
  scheduled: number;
  /** Scheduled in a started group, polling, but stuck on a resolver: the offer is never sent. */
  blocked: number;
  /** Scheduled in a started group, and no poll since the group started. */
  silent: number;
  offered: number;
  updated: number;
  failed: number;
}

export const MAX_GROUPS = 20;

/**
 * "1, 10, 100" → [1, 10, 100]: cumulative percents, each a whole number from 1 to 100 and
 * greater than the one before (as the API requires); else the reason it is not.
 */
export function parseGroupPercents(text: string): { percents: number[] } | { error: string } {
  const parts = text.split(/[\s,;]+/).filter((part) => part !== '');
  if (parts.length === 0) return { error: 'Give at least one group, e.g. 1, 10, 100.' };
  if (parts.length > MAX_GROUPS) return { error: `At most ${MAX_GROUPS} groups.` };
  const percents: number[] = [];
  for (const part of parts) {
    const percent = /^\d{1,3}%?$/.test(part) ? Number(part.replace('%', '')) : Number.NaN;
    if (!Number.isInteger(percent) || percent < 1 || percent > 100) return { error: `“${part}” is not a whole percent from 1 to 100.` };
    const previous = percents.at(-1);
    if (previous !== undefined && percent <= previous) {
      return { error: `Percents are cumulative: ${percent} must be greater than ${previous}, the group before it.` };
    }
    percents.push(percent);
  }
  return { percents };
}

export const memberCount = (counts: MemberCounts) => counts.scheduled + counts.blocked + counts.silent + counts.offered + counts.updated + counts.failed;

/** Whole percent of `part` in `whole`, rounded down (so 99.6 % is not shown as done); 0 of 0 is 0. */
export const percentOf = (part: number, whole: number) => (whole === 0 ? 0 : Math.floor((part * 100) / whole));

export interface ProgressShares {
  /** Shares of the members, in percent (the bar's segments); they never add up to more than 100. */
  updated: number;
  failed: number;
  offered: number;
  /** "12 of 130 updated (9 %)". */
  summary: string;
}

export function progressShares(counts: MemberCounts): ProgressShares {
  const total = memberCount(counts);
  const share = (count: number) => (total === 0 ? 0 : (count * 100) / total);
  const updated = share(counts.updated);
  const failed = Math.min(share(counts.failed), 100 - updated);
  const offered = Math.min(share(counts.offered), 100 - updated - failed);
  const failedText = counts.failed > 0 ? `, ${counts.failed.toLocaleString('en')} failed` : '';
  return {
    updated,
    failed,
    offered,
    summary: `${counts.updated.toLocaleString('en')} of ${total.toLocaleString('en')} updated (${percentOf(counts.updated, total)} %)${failedText}`,
  };
}

export type RolloutState = 'ready' | 'running' | 'paused' | 'finished' | 'aborted';
export type RolloutAction = 'approve' | 'start' | 'pause' | 'resume' | 'advance' | 'abort';

/**
 * The actions a rollout's state allows, in the order the page shows them. Approval comes
 * before start when the rollout needs it; the API refuses the creator's own approval, which
 * the page cannot know for a token without a subject.
 */
export function availableActions(rollout: { state: RolloutState; approval_required: boolean; approved_at: string | null }): RolloutAction[] {
  const awaitingApproval = rollout.approval_required && rollout.approved_at === null;
  switch (rollout.state) {
    case 'ready':
      return awaitingApproval ? ['approve', 'abort'] : ['start', 'abort'];
    case 'running':
      return ['pause', 'advance', 'abort'];
    case 'paused':
      return ['resume', 'abort'];
    default:
      return [];
  }
}
