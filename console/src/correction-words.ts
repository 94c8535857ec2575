/**
 * Corrections, firmware offers and the retry policy as people read them on the OKM page (the
 * drift report's data, contract §11, §13, §15). Never a correction's raw JSON: a users' assets
 * list carries its users' PIN hashes, which the console never shows. Pure: unit-tested.
 */

export interface RetryPolicyWords {
  offers: number;
  backoff_polls: number[];
  max_backoff_polls: number;
  from: 'rollout' | 'customer' | 'fleet';
}

export interface OfferHoldWords {
  rounds: number;
  offered: number;
  held_back: boolean;
  next_offer_poll: number;
  polls_until_offer: number;
  next_offer_at: string | null;
}

export interface FirmwareOfferWords {
  resolver: string;
  kind: string;
  version: string | null;
  source: 'pin' | 'rollout' | 'fleet_latest' | 'none';
  pin: string | null;
  rollout: { id: number; state: string; version: string; offering: boolean } | null;
  retry_policy: RetryPolicyWords;
  hold: OfferHoldWords | null;
}

/** A time as the browser shows it (day and time), for when an offer comes again. */
export const shortTime = (iso: string) => new Date(iso).toLocaleString(undefined, { hour: '2-digit', minute: '2-digit', day: 'numeric', month: 'short' });

const plural = (count: number, noun: string) => `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`;
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const versionOf = (offer: unknown) => (isRecord(offer) && typeof offer.version === 'string' ? offer.version : '?');

/** What a correction tells the device, in words; a list by its size only (a users' list holds PIN hashes). */
export function correctionWords(name: string, correction: Record<string, unknown> | null): string {
  if (correction === null) return 'nothing';
  const value = correction[name];
  switch (name) {
    case 'message': {
      const type = isRecord(value) && typeof value.type === 'string' ? value.type : 'a';
      return `deliver the ${type} message waiting`;
    }
    case 'kasFirmware':
      return `install KAS firmware ${versionOf(value)}`;
    case 'batchKeyFirmware':
      return `install batch key firmware ${versionOf(value)}`;
    case 'wirelessKeyFirmware':
      return `install wireless key firmware ${versionOf(value)}`;
    case 'kasDateTime':
      return 'set its clock to the server time';
    case 'cacheMode':
      return `set cache mode ${String(value)}`;
    case 'keyCheckoutWindowTime':
      return `set the key checkout window to ${String(value)} s, contact ${String(correction.keyCheckoutWindowContact ?? '—')}`;
    case 'retailCfg':
      return `set the retail configuration to ${String(value)} (auditing on)`;
    case 'assetList':
      return `replace its asset list: ${plural(Array.isArray(value) ? value.length : 0, 'lock')}`;
    case 'usersAssets':
      return `replace its users’ assets: ${plural(Array.isArray(value) ? value.length : 0, 'user')} (PIN hashes not shown)`;
    case 'auditUrl':
      return `send audit records to ${String(value)}`;
    case 'pollingInterval':
      return `poll every ${String(value)} s`;
    default:
      return `set ${Object.keys(correction).join(', ')}`;
  }
}

/** What stands behind a firmware offer: "3.3.0, offered by rollout #12 (finished)", "pinned to 3.3.0", "fleet latest 3.1.0". */
export function offerSourceWords(offer: FirmwareOfferWords): string {
  switch (offer.source) {
    case 'pin':
      return offer.version === null ? `pinned to ${offer.pin} (not in the catalog: nothing offered)` : `pinned to ${offer.version}`;
    case 'rollout':
      return `${offer.version} from rollout #${offer.rollout!.id} (${offer.rollout!.state})`;
    case 'fleet_latest':
      return offer.rollout === null
        ? `fleet latest ${offer.version}`
        : `fleet latest ${offer.version}; in rollout #${offer.rollout.id} (${offer.rollout.state}) of ${offer.rollout.version}, ${offer.rollout.offering ? 'whose version is older' : 'not offering it yet'}`;
    case 'none':
      return offer.rollout === null ? 'none: no release of this kind' : `none yet; in rollout #${offer.rollout.id} (${offer.rollout.state}) of ${offer.rollout.version}, not offering it yet`;
  }
}

const KIND_WORDS: Record<string, string> = { kas: 'KAS', batch_key: 'batch key', wireless_key: 'wireless key' };

const POLICY_OWNERS = { rollout: 'the rollout’s', customer: 'the customer’s', fleet: 'the fleet default' } as const;

/** The retry policy in force, with its numbers and whose it is. */
export function retryPolicyWords(policy: RetryPolicyWords): string {
  const owner = POLICY_OWNERS[policy.from];
  if (policy.offers === 0) return `${owner} retry policy: offers are never held back`;
  return `${owner} retry policy: after ${plural(policy.offers, 'offer')} not taken, held back ${policy.backoff_polls.join(', ')} polls in turn (at most ${policy.max_backoff_polls})`;
}

/** When a held-back offer comes again: "6 offers not taken in 2 rounds; held back, offered again on poll 10 (the 3rd poll from now, about 14:05)". */
export function nextOfferWords(hold: OfferHoldWords, formatTime: (iso: string) => string): string {
  const when = hold.polls_until_offer === 1 ? 'the next poll' : `the ${ordinal(hold.polls_until_offer)} poll from now`;
  const at = hold.next_offer_at === null ? '' : `, about ${formatTime(hold.next_offer_at)}`;
  return `${plural(hold.offered, 'offer')} not taken in ${plural(hold.rounds, 'round')}; ${hold.held_back ? 'held back, ' : ''}offered again on poll ${hold.next_offer_poll.toLocaleString('en')} (${when}${at})`;
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/**
 * The "Next poll" line of the OKM page: what the next poll sends; when nothing, but the OKM is
 * stuck or an offer is held back, says so and when the offer comes, rather than reading as all well.
 */
export function nextPollWords(
  next: { name: string; correction: Record<string, unknown> | null } | null,
  stuckOn: string | null,
  offers: readonly FirmwareOfferWords[],
  formatTime: (iso: string) => string,
): string {
  if (next !== null) return correctionWords(next.name, next.correction);
  const held = offers.find((offer) => offer.hold?.held_back);
  if (held) return `nothing else to correct; the ${KIND_WORDS[held.kind] ?? held.kind} firmware offer: ${nextOfferWords(held.hold!, formatTime)}`;
  if (stuckOn !== null) return `nothing to correct now, but stuck on ${stuckOn}: it did not take what it was sent`;
  return 'nothing to correct';
}
