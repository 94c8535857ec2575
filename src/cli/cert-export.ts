import type { Command } from 'commander';
import { exportChain } from '../pki/intermediates.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('export')
    .description('print the PEM chain of a certificate: the intermediate, then the deployment root')
    .argument('<cert>', 'certificate name')
    .option('--json', 'print one JSON object')
    .action(async (name: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const { certificate, chainPem } = await exportChain(context.db, name);
        printResult(options.json, { name: certificate.name, customer: certificate.customer, chain: chainPem }, chainPem.trimEnd());
      } finally {
        await context.close();
      }
    });
}
