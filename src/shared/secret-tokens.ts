import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Opaque bearer secrets (DLock API keys, OKM device tokens): a recognisable prefix and 32
 * random bytes as 43 base64url characters. Only the SHA-256 of the whole token is stored. A
 * slow KDF buys nothing here: it protects guessable secrets such as passwords, while 256
 * random bits cannot be brute-forced from their hash, and a fast hash keeps the check cheap
 * on every request.
 */
export const RANDOM_PART_PATTERN = '[A-Za-z0-9_-]{43}';

/** The random part of a new token. */
export const randomTokenPart = () => randomBytes(32).toString('base64url');

const sha256 = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** What is stored for a token: the lowercase hex SHA-256 of the whole token. */
export const tokenHash = (token: string) => sha256(token).toString('hex');

/** Compared against when nothing is stored, so that unknown and wrong tokens take the same path. */
const NO_HASH = Buffer.alloc(32);

/** Whether the token hashes to the stored hash, compared in constant time; false when none is stored. */
export function matchesTokenHash(token: string, storedHash: string | null | undefined): boolean {
  const stored = storedHash ? Buffer.from(storedHash, 'hex') : NO_HASH;
  const equal = stored.length === 32 && timingSafeEqual(sha256(token), stored);
  return equal && Boolean(storedHash);
}
