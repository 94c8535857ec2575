import fs from 'node:fs';
import type { Command } from 'commander';
import { parseMasterKey } from '../config/settings.ts';
import { commitMasterKeyFile, stageMasterKeyFile } from '../secrets/master-key.ts';
import { rotateKeys } from '../secrets/rotate-master-key.ts';
import { UsageError, cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'master-key', 'manage the keys that encrypt private keys and secrets at rest')
    .command('rotate')
    .description(
      'make a new data key current and reseal every private key and secret under it, while servers run; with a new master key, also rewrap every data key under it',
    )
    .option('--new-key-file <path>', 'also change the master key to the one in this file (64 hex digits or base64); or set NEW_MASTER_KEY')
    .option('--yes', 'do it (without --yes the command only says what it would do)')
    .option('--json', 'print one JSON object')
    .action(async (options: { newKeyFile?: string; yes?: boolean; json?: boolean }) => {
      const given = options.newKeyFile ? fs.readFileSync(options.newKeyFile, 'utf8').trim() : process.env.NEW_MASTER_KEY || undefined;
      if (!options.yes) {
        const what = given ? 'change the master key, rewrap every data key under it' : 'make a new data key current';
        throw new UsageError(`master-key rotate would ${what} and reseal every private key and secret; run it again with --yes`);
      }
      const context = await openContext();
      try {
        const { settings } = context;
        const usesKeyFile = settings.masterKey === undefined;
        const newMasterKey = given ? { key: parseMasterKey(options.newKeyFile ? '--new-key-file' : 'NEW_MASTER_KEY', given), source: 'the new master key' } : undefined;

        if (newMasterKey && usesKeyFile) stageMasterKeyFile(settings.dataDir, newMasterKey.key);
        const rotation = await rotateKeys(context.db, context.keyRing, cliChangeSource(), newMasterKey ? { newMasterKey } : {});
        if (newMasterKey && usesKeyFile) commitMasterKeyFile(settings.dataDir);

        const next = !newMasterKey
          ? `the previous data key ${rotation.previous} still opens what servers seal under it until they re-read the key ring (within seconds); retire it in a few minutes: keyfleet master-key retire --yes`
          : usesKeyFile
            ? `the key file in DATA_DIR now holds master key ${rotation.masterKeyFingerprint} (the old one is kept as master.key.previous); a running server reads it from there, no restart needed`
            : `set MASTER_KEY to the new key (${rotation.masterKeyFingerprint}) on every server and command and restart the servers; servers still on the old key (${context.keyRing.fingerprint}) answer /readyz 503, and requests that need the keys 503 with Retry-After, until then`;
        printResult(
          options.json,
          { data_key: rotation.kid, previous_data_key: rotation.previous, master_key: rotation.masterKeyFingerprint, resealed: rotation.resealed, key_file_replaced: Boolean(newMasterKey && usesKeyFile) },
          `data key ${rotation.kid} is current\n${Object.entries(rotation.resealed).map(([column, count]) => `${column}: ${count} resealed`).join('\n')}\n${next}`,
        );
      } finally {
        await context.close();
      }
    });
}
