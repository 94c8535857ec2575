import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Command } from 'commander';
import { parseMasterKey } from '../config/settings.ts';
import { commitMasterKeyFile, stageMasterKeyFile } from '../secrets/master-key.ts';
import { rotateMasterKey } from '../secrets/rotate-master-key.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'master-key', 'manage the key that encrypts private keys and secrets at rest')
    .command('rotate')
    .description('reseal every private key and secret under a new master key, in one transaction (stop every server first)')
    .option('--new-key-file <path>', 'file holding the new key (64 hex digits or base64); default NEW_MASTER_KEY, or a new random key when the key is the DATA_DIR key file')
    .option('--json', 'print one JSON object')
    .action(async (options: { newKeyFile?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const { settings } = context;
        const usesKeyFile = settings.masterKey === undefined;
        const given = options.newKeyFile ? fs.readFileSync(options.newKeyFile, 'utf8').trim() : process.env.NEW_MASTER_KEY;
        if (!given && !usesKeyFile) throw new Error('give the new key with --new-key-file or NEW_MASTER_KEY (MASTER_KEY is set, so keyfleet cannot store a key of its own)');
        const newKey = given ? parseMasterKey(options.newKeyFile ? '--new-key-file' : 'NEW_MASTER_KEY', given) : randomBytes(32);

        if (usesKeyFile) stageMasterKeyFile(settings.dataDir, newKey);
        const resealed = await rotateMasterKey(context.db, context.masterKey, newKey);
        if (usesKeyFile) commitMasterKeyFile(settings.dataDir);

        const next = usesKeyFile ? 'the key file in DATA_DIR holds the new key' : 'set MASTER_KEY to the new key on every server before starting them';
        printResult(
          options.json,
          { resealed, key_file_replaced: usesKeyFile },
          `${Object.entries(resealed).map(([column, count]) => `${column}: ${count} resealed`).join('\n')}\n${next}`,
        );
      } finally {
        await context.close();
      }
    });
}
