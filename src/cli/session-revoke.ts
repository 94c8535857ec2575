import os from 'node:os';
import type { Command } from 'commander';
import { revokeSessions } from '../auth/sessions.ts';
import { notFound } from '../http/errors.ts';
import { commandGroup, openContext, personIdOption, printResult, UsageError } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'session', 'list and end the sessions of people signed in')
    .command('revoke')
    .description("end one session, or every session of a person (offboarding): a 401 on every process within a second")
    .argument('[id]', 'the session id printed by session list')
    .option('--person <id>', 'every session of this person')
    .option('--json', 'print one JSON object')
    .action(async (id: string | undefined, options: { person?: string; json?: boolean }) => {
      if ((id === undefined) === (options.person === undefined)) throw new UsageError('give a session id or --person, not both');
      if (id !== undefined && !/^[0-9a-f]{16}$/.test(id)) throw new UsageError(`expected a session id of 16 hex digits, got "${id}"`);
      const context = await openContext();
      try {
        const by = `cli:${os.userInfo().username}`;
        let revoked: number;
        if (id === undefined) {
          const personId = personIdOption(options.person!);
          if (!(await context.db.selectFrom('people').select('id').where('id', '=', personId).executeTakeFirst())) throw notFound(`person ${personId} not found`);
          revoked = await revokeSessions(context.db, { personId }, { now: Date.now(), by });
        } else {
          revoked = await revokeSessions(context.db, { handle: id }, { now: Date.now(), by });
          if (revoked === 0) throw notFound(`session ${id} not found, or ended already`);
        }
        printResult(options.json, { revoked }, `ended ${revoked} session${revoked === 1 ? '' : 's'}`);
      } finally {
        await context.close();
      }
    });
}
