import type { Resolver } from './types.ts';

/** Largest clock difference left alone (5 minutes); one millisecond more is corrected. */
export const MAX_CLOCK_SKEW_MS = 300_000;

export const dateTime: Resolver = ({ serverTime }, { kasDateTime }) =>
  kasDateTime === undefined || Math.abs(serverTime - kasDateTime) > MAX_CLOCK_SKEW_MS ? { kasDateTime: serverTime } : undefined;
