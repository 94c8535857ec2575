import type { Command } from 'commander';
import { retireSigningKey } from '../auth/signing-keys.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'signing-key', 'manage the key that signs the deployment’s JWTs')
    .command('retire')
    .description('stop a previous signing key from verifying tokens now (servers notice within a minute)')
    .argument('<kid>', 'the key id, as `keyfleet signing-key list` shows it')
    .option('--json', 'print one JSON object')
    .action(async (kid: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        await retireSigningKey(context.db, kid);
        printResult(options.json, { kid, retired: true }, `retired ${kid}`);
      } finally {
        await context.close();
      }
    });
}
