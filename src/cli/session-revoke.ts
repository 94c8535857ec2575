import type { Command } from 'commander';
import { SESSION_HANDLE_PATTERN, revokePersonSessions, revokeSession } from '../auth/sessions.ts';
import { cliChangeSource, commandGroup, openContext, personIdOption, printResult, UsageError } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'session', 'list and end the sessions of people signed in')
    .command('revoke')
    .description("end one session, or every session of a person (offboarding): a 401 on every process within a second")
    .argument('[id]', 'the session id printed by session list')
    .option('--person <id>', 'every session of this person')
    .option('--json', 'print one JSON object')
    .action(async (id: string | undefined, options: { person?: string; json?: boolean }) => {
      if ((id === undefined) === (options.person === undefined)) throw new UsageError('give a session id or --person, not both');
      if (id !== undefined && !new RegExp(SESSION_HANDLE_PATTERN).test(id)) throw new UsageError(`expected a session id of 16 hex digits, got "${id}"`);
      const personId = id === undefined ? personIdOption(options.person!) : undefined;
      const context = await openContext();
      try {
        const revokedBy = { now: Date.now(), source: cliChangeSource() };
        const revoked = personId === undefined ? await revokeSession(context.db, id!, revokedBy) : await revokePersonSessions(context.db, personId, revokedBy);
        printResult(options.json, { revoked }, `ended ${revoked} session${revoked === 1 ? '' : 's'}`);
      } finally {
        await context.close();
      }
    });
}
