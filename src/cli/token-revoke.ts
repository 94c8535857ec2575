import os from 'node:os';
import type { Command } from 'commander';
import { revokeToken } from '../auth/api-tokens.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'token', 'issue, list and revoke API tokens')
    .command('revoke')
    .description('revoke an API token: every server process answers it 401 within a second')
    .argument('<id>', 'the token id (jti) printed by token issue and token list')
    .option('--json', 'print one JSON object')
    .action(async (id: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const revoked = await revokeToken(context.db, id, { now: Date.now(), by: `cli:${os.userInfo().username}` });
        printResult(options.json, { token: revoked }, `revoked: ${revoked.id} (${revoked.name}) at ${revoked.revoked_at}`);
      } finally {
        await context.close();
      }
    });
}
