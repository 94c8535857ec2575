import fs from 'node:fs';
import path from 'node:path';
import { createHmac, randomBytes } from 'node:crypto';
import type { Settings } from '../config/settings.ts';
import { SettingsError } from '../config/settings.ts';

export const MASTER_KEY_FILE = 'master.key';

/** The master key and where it came from ("MASTER_KEY" or the key file's path), for messages. */
export interface MasterKey {
  key: Buffer;
  source: string;
  /**
   * The keys its source holds now, read again (a key file that a master key change replaced):
   * absent for MASTER_KEY, which a running process cannot be given anew.
   */
  reread?(): MasterKey[];
}

/**
 * The key that wraps the data keys (src/secrets/key-ring.ts): MASTER_KEY when set; on the
 * embedded SQLite default, a key file (mode 0600) in DATA_DIR made on first start. With
 * PostgreSQL several processes must share it, so there it has to be given.
 */
export function loadMasterKey(settings: Pick<Settings, 'masterKey' | 'databaseUrl' | 'dataDir'>): MasterKey {
  if (settings.masterKey) return { key: settings.masterKey, source: 'MASTER_KEY' };
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
  const key = readKeyFile(file);
  if (!key) throw new SettingsError('MASTER_KEY', `${file} does not hold 64 hex digits`);
  return { key, source: file, reread: () => rereadKeyFiles(settings.dataDir) };
}

/** The key a key file holds, or undefined when it does not hold 64 hex digits. */
function readKeyFile(file: string): Buffer | undefined {
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'hex');
  return key.length === 32 ? key : undefined;
}

/**
 * The keys of DATA_DIR's key files as they are now: master.key, and master.key.new, which a
 * master key change writes before its commit and renames to master.key only after resealing
 * every value (so that a server may take the new key while the CLI still reseals). Files that
 * are missing or unreadable are left out: the key ring takes only a key that the database names.
 */
function rereadKeyFiles(dataDir: string): MasterKey[] {
  const keys: MasterKey[] = [];
  for (const file of [path.join(dataDir, MASTER_KEY_FILE), stagedFile(dataDir)]) {
    try {
      const key = readKeyFile(file);
      if (key) keys.push({ key, source: file, reread: () => rereadKeyFiles(dataDir) });
    } catch {
      // Absent (no change under way) or not readable: not a candidate.
    }
  }
  return keys;
}

/**
 * Names a master key without revealing it: the first 64 bits of an HMAC under the key, as
 * 16 hex digits. The database stores it beside each wrapped data key.
 */
export function masterKeyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('keyfleet master key fingerprint').digest('hex').slice(0, 16);
}

const stagedFile = (dataDir: string) => path.join(dataDir, `${MASTER_KEY_FILE}.new`);
export const previousKeyFile = (dataDir: string) => path.join(dataDir, `${MASTER_KEY_FILE}.previous`);

/**
 * Key-file change, step 1: writes the new key beside the current one before the data keys are
 * rewrapped, so that a crash after the rewrap commits cannot lose it.
 */
export function stageMasterKeyFile(dataDir: string, key: Buffer): void {
  fs.writeFileSync(stagedFile(dataDir), key.toString('hex'), { mode: 0o600 });
}

/**
 * Step 2, once the rewrap has committed: the new key replaces the current one, which is kept as
 * master.key.previous (backups taken before the change need it).
 */
export function commitMasterKeyFile(dataDir: string): void {
  const current = path.join(dataDir, MASTER_KEY_FILE);
  fs.copyFileSync(current, previousKeyFile(dataDir));
  fs.chmodSync(previousKeyFile(dataDir), 0o600);
  fs.renameSync(stagedFile(dataDir), current);
}

/** A staged key file left by a change that stopped between its two steps, if any. */
export function stagedMasterKeyFile(dataDir: string): string | undefined {
  return fs.existsSync(stagedFile(dataDir)) ? stagedFile(dataDir) : undefined;
}
