import { SESSION_REFRESH_TOKENS } from './auth/sessions.ts';
import { SIGNING_PRIVATE_KEYS } from './auth/signing-keys.ts';
import type { Db } from './db/database.ts';
import { DEPLOYMENT_SECRET } from './dlock/key-certificate.ts';
import { LOCK_KEYS } from './dlock/locks.ts';
import { INTERMEDIATE_PRIVATE_KEYS } from './pki/intermediates.ts';
import { ROOT_PRIVATE_KEY } from './pki/root-ca.ts';
import { KeyRing } from './secrets/key-ring.ts';
import type { MasterKey } from './secrets/master-key.ts';
import type { SealedColumn } from './secrets/sealed-columns.ts';
import { PREVIOUS_WEBHOOK_SECRETS, WEBHOOK_SECRETS } from './webhooks/secrets.ts';

/**
 * Every column sealed under a data key. Each capability declares its own beside the code that
 * seals; they are listed here, above the capabilities, so that src/secrets/ reseals them all on
 * a key rotation without knowing any capability. A new one is one line here.
 */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  ROOT_PRIVATE_KEY,
  INTERMEDIATE_PRIVATE_KEYS,
  SIGNING_PRIVATE_KEYS,
  DEPLOYMENT_SECRET,
  LOCK_KEYS,
  WEBHOOK_SECRETS,
  PREVIOUS_WEBHOOK_SECRETS,
  SESSION_REFRESH_TOKENS,
];

/** The key ring of a process: its data keys, unwrapped with the master key, over every sealed column. Tests shorten the timing. */
export function createKeyRing(db: Db, masterKey: MasterKey, timing: { refreshMs?: number; maxAgeMs?: number } = {}): KeyRing {
  return new KeyRing(db, masterKey, SEALED_COLUMNS, timing);
}
