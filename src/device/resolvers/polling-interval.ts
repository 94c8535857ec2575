import type { Resolver } from './types.ts';

// The effective interval is always within 5–3600, so "differs" also covers a reported value out of range.
export const pollingInterval: Resolver = (desired, reported) =>
  reported.pollingInterval === desired.pollingInterval ? undefined : { pollingInterval: desired.pollingInterval };
