import { useEffect, useState } from 'preact/hooks';
import { decodeClaims, type TokenClaims } from './session-token.ts';

/**
 * The signed-in token, kept in sessionStorage: it lives as long as the browser tab, is not
 * shared with other tabs, and sign-out forgets it.
 */
export interface Session {
  token: string;
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
  return token !== null && claims !== null ? { token, claims } : null;
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
  current = { token, claims };
  endedBecause = null;
  notify();
  return null;
}

/** Forgets the token; `reason` is shown on the sign-in page (an expired or revoked token). */
export function signOut(reason: string | null = null): void {
  sessionStorage.removeItem(STORAGE_KEY);
  current = null;
  endedBecause = reason;
  notify();
}

export const currentSession = () => current;
export const sessionEndReason = () => endedBecause;

/** The session, re-rendering the component when it starts or ends. */
export function useSession(): Session | null {
  const [session, setSession] = useState(current);
  useEffect(() => {
    const listener = () => setSession(current);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return session;
}
