import type { Resolver } from './types.ts';

export const keyCheckoutWindow: Resolver = ({ keyCheckoutWindow: window }, reported) =>
  window && (reported.keyCheckoutWindowTime !== window.time || reported.keyCheckoutWindowContact !== window.contact)
    ? { keyCheckoutWindowTime: window.time, keyCheckoutWindowContact: window.contact }
    : undefined;
