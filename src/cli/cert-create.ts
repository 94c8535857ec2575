import type { Command } from 'commander';
import { createIntermediateRecorded } from '../pki/intermediates.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('create')
    .description('create a customer intermediate certificate signed by the deployment root')
    .requiredOption('--customer <name>', 'the customer that owns the certificate')
    .requiredOption('--name <cert>', 'certificate name, unique in the deployment: 1-64 characters of A-Z a-z 0-9 . _ -')
    .option('--json', 'print one JSON object')
    .action(async (options: { customer: string; name: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const created = await createIntermediateRecorded(context.db, context.keyRing, context.settings, options, cliChangeSource());
        const expires = new Date(created.notAfter).toISOString();
        printResult(
          options.json,
          { id: created.id, name: created.name, customer: created.customer, serial: created.serial, not_after: expires, certificate: created.certificatePem },
          `name: ${created.name}\ncustomer: ${created.customer}\nserial: ${created.serial}\nnot after: ${expires}`,
        );
      } finally {
        await context.close();
      }
    });
}
