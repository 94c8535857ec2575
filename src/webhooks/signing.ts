import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export const generateWebhookSecret = () => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

/** The HMAC key of a whsec_ secret: the bytes its base64 part encodes. */
export const signingKeyOf = (secret: string) => Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');

/**
 * The `webhook-signature` header (Standard Webhooks): `v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>` with each key, space-separated (several while a secret rotates).
 */
export function signatureHeader(keys: readonly Buffer[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return keys.map((key) => `v1,${createHmac('sha256', key).update(content).digest('base64')}`).join(' ');
}
