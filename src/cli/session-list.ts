import type { Command } from 'commander';
import { listSessions } from '../auth/sessions.ts';
import { commandGroup, openContext, personIdOption, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'session', 'list and end the sessions of people signed in')
    .command('list')
    .description('list the sessions that have not ended, newest first')
    .option('--person <id>', "only this person's sessions (the id the list shows)")
    .option('--json', 'print one JSON object')
    .action(async (options: { person?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const sessions = await listSessions(context.db, { now: Date.now(), ...(options.person === undefined ? {} : { personId: personIdOption(options.person) }) });
        const lines = sessions.map((session) => `${session.id}  person ${session.person.id} ${session.person.email ?? session.person.subject}  since ${session.created_at}  last seen ${session.seen_at}`);
        printResult(options.json, { sessions }, sessions.length === 0 ? 'no sessions' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
