import fs from 'node:fs';
import type { Command } from 'commander';
import { revokeToken } from '../auth/api-tokens.ts';
import { revokeTokenItself } from '../auth/tokens.ts';
import { cliChangeSource, commandGroup, openContext, printResult, UsageError } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'token', 'issue, list and revoke API tokens')
    .command('revoke')
    .description('revoke an API token: every server process answers it 401 within a second')
    .argument('[id]', 'the token id (jti) printed by token issue and token list')
    .option('--token-file <path>', 'revoke the token in this file (- for stdin): also one signed before the token registry, which has no id on the list')
    .option('--json', 'print one JSON object')
    .action(async (id: string | undefined, options: { tokenFile?: string; json?: boolean }) => {
      if ((id === undefined) === (options.tokenFile === undefined)) throw new UsageError('give a token id or --token-file, not both');
      // The token is read from a file or stdin, never from the command line, where the shell's history and ps would keep it.
      const token = options.tokenFile === undefined ? undefined : fs.readFileSync(options.tokenFile === '-' ? 0 : options.tokenFile, 'utf8').trim();
      const context = await openContext();
      try {
        const revokedBy = { now: Date.now(), source: cliChangeSource() };
        const revoked = token === undefined ? await revokeToken(context.db, id!, revokedBy) : await revokeTokenItself(context.db, context.settings, token, revokedBy);
        printResult(options.json, { token: revoked }, `revoked: ${revoked.id} (${revoked.name}) at ${revoked.revoked_at}`);
      } finally {
        await context.close();
      }
    });
}
