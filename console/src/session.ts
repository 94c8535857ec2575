import { useEffect, useState } from 'preact/hooks';
import { decodeClaims, type TokenClaims } from './session-token.ts';
import { claimsOfPerson, type Me } from './single-sign-on.ts';

/**
 * Who the console acts as. Either a token kept in sessionStorage (a `keyfleet console` link or a
 * pasted token): it lives as long as the browser tab, is not shared with other tabs, and
 * sign-out forgets it. Or a person signed in by single sign-on: the server holds the session
 * and the browser only an HttpOnly cookie, so the console keeps nothing but what
 * GET /api/v1/me said (who, their role, the anti-CSRF token its writes send).
 */
export type Session = TokenSession | PersonSession;

export interface TokenSession {
  kind: 'token';
  token: string;
  claims: TokenClaims;
}

export interface PersonSession {
  kind: 'person';
  person: { id: string; name: string; role: string | null; customer: string | null };
  /** Sent in x-csrf-token on every write, which the server refuses without it. */
  csrfToken: string;
  claims: TokenClaims;
}

const STORAGE_KEY = 'keyfleet.console.token';

let current: Session | null = null;
/** Why the last session ended, for the sign-in page ("Your token has expired…"); null after a deliberate sign-out. */
let endedBecause: string | null = null;
const listeners = new Set<() => void>();

const notify = () => listeners.forEach((listener) => listener());

function load(): Session | null {
  const token = sessionStorage.getItem(STORAGE_KEY);
  const claims = token === null ? null : decodeClaims(token);
  return token !== null && claims !== null ? { kind: 'token', token, claims } : null;
}
current = load();

/** Keeps `token` for this tab; returns a reason when it cannot be used at all, else null. */
export function signIn(token: string, now = Date.now()): string | null {
  const claims = decodeClaims(token);
  if (claims === null) return 'This is not a token: paste the JWT that `keyfleet console` or `keyfleet token issue` printed.';
  if (claims.expiresAt !== null && claims.expiresAt * 1000 <= now) {
    return `This token expired at ${new Date(claims.expiresAt * 1000).toLocaleString()}. Ask for a new one (keyfleet console).`;
  }
  sessionStorage.setItem(STORAGE_KEY, token);
  current = { kind: 'token', token, claims };
  endedBecause = null;
  notify();
  return null;
}

/** Acts as the person of the session cookie, as GET /api/v1/me described them (again, when their role may have changed). */
export function signInAsPerson(me: Me, csrfToken: string): void {
  current = { kind: 'person', person: { id: me.actor.id, name: me.actor.name, role: me.role, customer: me.customer }, csrfToken, claims: claimsOfPerson(me) };
  endedBecause = null;
  notify();
}

/**
 * Forgets the token or the person; `reason` is shown on the sign-in page (an expired or revoked
 * token or session). A person's session on the server is ended by the API client's signOutPerson.
 */
export function signOut(reason: string | null = null): void {
  sessionStorage.removeItem(STORAGE_KEY);
  current = null;
  endedBecause = reason;
  notify();
}

export const currentSession = () => current;
export const sessionEndReason = () => endedBecause;

/** The session, re-rendering the component when it starts, changes or ends. */
export function useSession(): Session | null {
  const [session, setSession] = useState(current);
  useEffect(() => {
    const listener = () => setSession(current);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return session;
}
