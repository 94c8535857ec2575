import type { Db } from '../db/database.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { ownerOf, webhookSecrets } from './secrets.ts';
import { signingKeyOf } from './signing.ts';

/** Secrets are re-read this often, so a rotation by the CLI reaches running processes. */
const SECRET_CACHE_MS = 30_000;

/**
 * The keys that sign a delivery, status and fleet events alike: the current and, during a
 * rotation's overlap, the previous secret of the row's owner (its customer, or the deployment
 * for null), unsealed once per owner per SECRET_CACHE_MS. Deliveries asking at once share one
 * read; a failed read is not kept.
 */
export function createSigningKeyCache(db: Db, keyRing: KeyRing): (customerId: number | null, now: number) => Promise<Buffer[]> {
  const byOwner = new Map<string, { keys: Promise<Buffer[]>; until: number }>();
  return (customerId, now) => {
    const owner = ownerOf(customerId);
    const cached = byOwner.get(owner);
    if (cached && cached.until > now) return cached.keys;
    const keys = webhookSecrets(db, keyRing, owner, now).then(({ current, previous }) =>
      [current, previous?.secret].filter((secret) => secret !== undefined).map(signingKeyOf),
    );
    byOwner.set(owner, { keys, until: now + SECRET_CACHE_MS });
    keys.catch(() => byOwner.delete(owner));
    return keys;
  };
}
