import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Settings } from '../config/settings.ts';
import { SettingsError } from '../config/settings.ts';

export const MASTER_KEY_FILE = 'master.key';

/**
 * The key that encrypts private keys at rest: MASTER_KEY when set; on the embedded SQLite
 * default, a key file (mode 0600) in DATA_DIR made on first start. With PostgreSQL several
 * processes must share it, so there it has to be given.
 */
export function loadMasterKey(settings: Pick<Settings, 'masterKey' | 'databaseUrl' | 'dataDir'>): Buffer {
  if (settings.masterKey) return settings.masterKey;
  if (settings.databaseUrl) {
    throw new SettingsError('MASTER_KEY', 'required when DATABASE_URL is set (openssl rand -hex 32)');
  }
  const file = path.join(settings.dataDir, MASTER_KEY_FILE);
  fs.mkdirSync(settings.dataDir, { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'hex');
  if (key.length !== 32) throw new SettingsError('MASTER_KEY', `${file} does not hold 64 hex digits`);
  return key;
}

const stagedFile = (dataDir: string) => path.join(dataDir, `${MASTER_KEY_FILE}.new`);

/**
 * Key-file rotation, step 1: writes the new key beside the current one before any value is
 * resealed, so that a crash after the reseal commits cannot lose it.
 */
export function stageMasterKeyFile(dataDir: string, key: Buffer): void {
  fs.writeFileSync(stagedFile(dataDir), key.toString('hex'), { mode: 0o600 });
}

/** Step 2, once the reseal has committed: the new key replaces the current one. */
export function commitMasterKeyFile(dataDir: string): void {
  fs.renameSync(stagedFile(dataDir), path.join(dataDir, MASTER_KEY_FILE));
}
