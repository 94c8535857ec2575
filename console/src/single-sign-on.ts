import type { TokenClaims } from './session-token.ts';

/**
 * Single sign-on in the console: whether the server offers it, where a sign-in starts, and how
 * the API's answers about a person's session read on the sign-in page. Pure but for
 * `singleSignOnOffered`, which reads the page.
 */

/** The meta tag src/console/plugin.ts writes into index.html when an OpenID Provider is set up. */
export const SINGLE_SIGN_ON_META = 'meta[name="keyfleet-sign-in"][content="single-sign-on"]';

export const singleSignOnOffered = (page: ParentNode = document): boolean => page.querySelector(SINGLE_SIGN_ON_META) !== null;

/** Where single sign-on starts, to come back to `consolePath` (a path below /console with its query); any other path comes back to the overview. */
export function singleSignOnHref(consolePath: string): string {
  const returnTo = /^\/console(?:[/?]|$)/.test(consolePath) && !consolePath.includes('//') ? consolePath : '/console/';
  return `/auth/oidc/login?return_to=${encodeURIComponent(returnTo)}`;
}

/** GET /api/v1/me's data. */
export interface Me {
  actor: { kind: 'person' | 'token' | 'api_key' | 'cli' | 'system'; id: string; name: string };
  /** A person's roles, joined by ", "; null for a token. */
  role: string | null;
  customer: string | null;
  scopes: string[];
}

/** What the pages read of a person signed in by single sign-on: the same as of a token, from the server's answer instead of a token's claims. */
export function claimsOfPerson(me: Me): TokenClaims {
  return {
    scopes: me.scopes,
    customer: me.customer,
    isAdmin: me.scopes.includes('admin'),
    expiresAt: null,
    subject: me.actor.name,
    tokenId: null,
  };
}

/**
 * The sign-in page's explanation of a 401 to a person's session: ended by sign-out elsewhere,
 * revoked by an administrator, expired or idle. The API's sentence ends in ": sign in again",
 * which the page's own words say.
 */
export function sessionEndedReason(apiMessage: string): string {
  const why = apiMessage.replace(/:\s*sign in again\.?$/i, '');
  return `You were signed out: ${why.charAt(0).toLowerCase()}${why.slice(1)}. Sign in again to go on.`;
}

/** The sign-in page's explanation of a session that still exists but grants nothing (the person's groups or bindings changed). */
export function noAccessReason(apiMessage: string): string {
  return `keyfleet refused your session (403): ${apiMessage}`;
}

/** The answer of a GET /api/v1/me that found no credential at all: nobody is signed in, which is not worth a word. */
export const NO_CREDENTIAL = 'Missing bearer token';
