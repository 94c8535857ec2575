/** Pure formatting and classification shared by the pages; no DOM here (unit-tested under Node). */

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

const relativeFormat = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

/** "5 seconds ago", "in 3 minutes", "now": the largest whole unit of the distance from `now`. */
export function relativeTime(iso: string, now: number): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (Math.abs(seconds) < 5) return 'just now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return relativeFormat.format(Math.trunc(seconds / size), unit);
  }
  return 'just now';
}

/** The time in the browser's zone, e.g. "22 Nov 2026, 23:41:07". */
export function localTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** The OKM record's and the drift report's `state`: where the fleet summary counts the OKM and which state= list holds it. */
export type OkmState = 'never_polled' | 'drifting' | 'in_step';

/**
 * The state to show when what the next poll is expected to send is known as well (`next`: its
 * reply key, null for none): the OKM's state, except that an OKM whose last poll was answered
 * {} but whose next poll will correct it (its configuration changed since) is not in step but
 * has a correction due. Undefined `next` (not known): the state.
 */
export function okmShownState(okm: { state: OkmState }, next: string | null | undefined): OkmShownState {
  return okm.state === 'in_step' && next !== undefined && next !== null ? 'due' : okm.state;
}

export type OkmShownState = OkmState | 'due';

export const STATE_LABELS: Record<OkmShownState | 'overdue' | 'stuck' | 'sent', string> = {
  in_step: 'In step',
  drifting: 'Drifting',
  due: 'Correction due',
  never_polled: 'Never polled',
  overdue: 'Overdue',
  stuck: 'Stuck',
  sent: 'Sent on the last poll',
};

/** The OKM record's `stuck` (contract §15). */
export interface StuckOkm {
  resolver: string;
  /** Epoch ms. */
  since: number;
  polls: number;
}

/** Where and how to write times: the browser's own unless a test fixes them. */
export interface TimeStyle {
  locale?: string;
  timeZone?: string;
}

/**
 * "sent pollingInterval on 5 polls in a row without effect, since 14:02": why an OKM is stuck.
 * The time of day alone on the day it is shown; with the date on another day, so that an OKM
 * stuck for days does not read as stuck since this afternoon.
 */
export function stuckReason(stuck: StuckOkm, now: number, style: TimeStyle = {}): string {
  const { locale, timeZone } = style;
  const dateOf = (epochMs: number, options: Intl.DateTimeFormatOptions) => new Date(epochMs).toLocaleDateString(locale, { timeZone, ...options });
  const sameDay = dateOf(stuck.since, {}) === dateOf(now, {});
  const sameYear = dateOf(stuck.since, { year: 'numeric' }) === dateOf(now, { year: 'numeric' });
  const time = new Date(stuck.since).toLocaleString(locale, {
    timeZone,
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    ...(sameDay ? {} : { day: 'numeric', month: 'short', ...(sameYear ? {} : { year: 'numeric' }) }),
  });
  return `sent ${stuck.resolver} on ${stuck.polls} ${stuck.polls === 1 ? 'poll' : 'polls'} in a row without effect, since ${time}`;
}

/**
 * Under a drift row whose correction the last poll sent too, though it is not the row marked
 * sent (`verdict` next, later or held back): why it is due again. A new message waits behind
 * the one sent; a firmware offer not taken is held back by the retry policy; the OKM stuck on
 * this resolver did not apply it; otherwise the configuration changed after that poll.
 */
export function sentOnLastPollNote(resolver: { name: string; verdict: string }, stuckResolver: string | null): string {
  if (resolver.name === 'message') return 'An earlier message was sent on the last poll.';
  if (resolver.verdict === 'held_back') return 'Offered on the last poll and not taken; the retry policy skips it on the next polls.';
  if (resolver.name === stuckResolver) return 'Also sent on the last poll, without effect: the OKM is stuck on it.';
  return 'Also sent on the last poll; the configuration changed since.';
}
