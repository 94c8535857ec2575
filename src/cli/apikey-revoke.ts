import type { Command } from 'commander';
import { revokeApiKeyRecorded } from '../dlock/api-keys.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'apikey', 'manage DLock API keys')
    .command('revoke')
    .description('revoke a DLock API key; it gets 401 from then on')
    .argument('<id>', 'the key id printed by apikey create')
    .option('--json', 'print one JSON object')
    .action(async (id: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const revoked = await revokeApiKeyRecorded(context.db, cliChangeSource(), id);
        printResult(options.json, { id: revoked.id, revoked_at: revoked.revokedAt }, `revoked: ${revoked.id}`);
      } finally {
        await context.close();
      }
    });
}
