import fs from 'node:fs';
import type { Settings } from '../config/settings.ts';
import { MasterKeyMismatchError, type KeyRing } from './key-ring.ts';
import { masterKeyFingerprint, stagedMasterKeyFile } from './master-key.ts';

/**
 * The key ring of a process, loaded and verified: a master key that does not wrap the
 * database's data keys is refused here, with the fingerprint the database expects.
 */
export async function loadKeyRing(keyRing: KeyRing, settings: Pick<Settings, 'masterKey' | 'dataDir'>): Promise<KeyRing> {
  try {
    await keyRing.refresh();
  } catch (error) {
    throw withStagedKeyHint(error, settings);
  }
  return keyRing;
}

/** A key-file change that stopped between its two steps leaves the new key in master.key.new: say so. */
function withStagedKeyHint(error: unknown, settings: Pick<Settings, 'masterKey' | 'dataDir'>): unknown {
  const staged = settings.masterKey === undefined ? stagedMasterKeyFile(settings.dataDir) : undefined;
  if (!(error instanceof MasterKeyMismatchError) || !staged) return error;
  const fingerprint = masterKeyFingerprint(Buffer.from(fs.readFileSync(staged, 'utf8').trim(), 'hex'));
  return new MasterKeyMismatchError(`${error.message} (${staged} holds master key ${fingerprint}, left by a master key change that stopped before replacing the key file)`);
}
