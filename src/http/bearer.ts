const BEARER = /^Bearer +(\S+) *$/i;

export type BearerCredential = { ok: true; credential: string } | { ok: false; reason: 'missing' | 'malformed' };

/** The credential of an `Authorization: Bearer <credential>` header; missing also when the header is empty. */
export function bearerCredential(header: string | undefined): BearerCredential {
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing' };
  const match = BEARER.exec(header);
  return match ? { ok: true, credential: match[1]! } : { ok: false, reason: 'malformed' };
}
