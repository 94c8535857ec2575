/** What the console reads from a bearer token without verifying it (the API verifies every request). */
export interface TokenClaims {
  scopes: string[];
  customer: string | null;
  isAdmin: boolean;
  /** Epoch seconds; null when the token has no exp (the API refuses such a token). */
  expiresAt: number | null;
  subject: string | null;
  /** The token's id (`jti`), as the token registry lists it; null when it has none. */
  tokenId: string | null;
}

function base64UrlDecode(part: string): string {
  const base64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
  const bytes = Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** The claims of a compact JWT; null when the text is not one. */
export function decodeClaims(token: string): TokenClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]*$/.test(part))) return null;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(base64UrlDecode(parts[1]!)) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof payload !== 'object' || payload === null) return null;
  const scopes = new Set<string>();
  for (const claim of [payload.scope, payload.scp]) {
    const values = typeof claim === 'string' ? claim.split(/\s+/) : Array.isArray(claim) ? claim : [];
    for (const value of values) if (typeof value === 'string' && value !== '') scopes.add(value);
  }
  return {
    scopes: [...scopes],
    customer: typeof payload.customer === 'string' ? payload.customer : null,
    isAdmin: scopes.has('admin'),
    expiresAt: typeof payload.exp === 'number' ? payload.exp : null,
    subject: typeof payload.sub === 'string' ? payload.sub : null,
    tokenId: typeof payload.jti === 'string' ? payload.jti : null,
  };
}

/** The token of a sign-in URL's fragment ("#token=…", as `keyfleet console` prints it); null when there is none. */
export function tokenFromFragment(hash: string): string | null {
  const token = new URLSearchParams(hash.replace(/^#/, '')).get('token');
  return token === null || token.trim() === '' ? null : token.trim();
}
