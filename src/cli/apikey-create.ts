import type { Command } from 'commander';
import { createApiKeyRecorded } from '../dlock/api-keys.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'apikey', 'manage DLock API keys')
    .command('create')
    .description('print a new DLock API key (shown once) and its id')
    .requiredOption('--customer <name>', 'the customer the key acts for')
    .option('--label <text>', 'a note for operators, such as the app that uses the key')
    .option('--json', 'print one JSON object')
    .action(async (options: { customer: string; label?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const created = await createApiKeyRecorded(context.db, cliChangeSource(), { customer: options.customer, label: options.label });
        printResult(
          options.json,
          { id: created.id, key: created.key, customer: created.customer, label: created.label },
          `id: ${created.id}\nkey: ${created.key}\n(the key is shown only this once)`,
        );
      } finally {
        await context.close();
      }
    });
}
