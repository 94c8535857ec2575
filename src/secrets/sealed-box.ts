import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KeyRing } from './key-ring.ts';

/** AES-256-GCM: "<iv>.<tag>.<ciphertext>" in base64url. */
export function encrypt(key: Buffer, plaintext: Buffer | string, associatedData: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associatedData));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url')).join('.');
}

export function decrypt(key: Buffer, encrypted: string, associatedData: string): Buffer {
  const [iv, tag, ciphertext, extra] = encrypted.split('.');
  if (!iv || !tag || ciphertext === undefined || extra !== undefined) throw new Error('sealed value has an unknown format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(associatedData));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
}

/** Seals under the ring's current data key: "v2.<kid>.<iv>.<tag>.<ciphertext>". */
export function seal(ring: KeyRing, plaintext: Buffer | string, associatedData = ''): Promise<string> {
  return ring.seal(plaintext, associatedData);
}

/** Opens a value sealed under any data key of the ring (or, "v1.…", directly under the master key, before key ids). */
export function open(ring: KeyRing, sealed: string, associatedData = ''): Promise<Buffer> {
  return ring.open(sealed, associatedData);
}
