import type { Command } from 'commander';
import { createCustomerRecorded } from '../customers/service.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'customer', 'manage customers (tenants)')
    .command('create')
    .description('create a customer (tenant)')
    .argument('<name>', 'customer name: 1-64 characters of A-Z a-z 0-9 . _ -')
    .option('--time-zone <zone>', 'IANA time zone of its stores, for rollout maintenance windows (default UTC)')
    .option('--json', 'print one JSON object')
    .action(async (name: string, options: { json?: boolean; timeZone?: string }) => {
      const context = await openContext();
      try {
        const customer = await createCustomerRecorded(context.db, cliChangeSource(), name, options.timeZone ?? null);
        const timeZone = options.timeZone === undefined ? {} : { time_zone: options.timeZone };
        printResult(
          options.json,
          { id: customer.id, name: customer.name, ...timeZone },
          `id: ${customer.id}\nname: ${customer.name}${options.timeZone === undefined ? '' : `\ntime_zone: ${options.timeZone}`}`,
        );
      } finally {
        await context.close();
      }
    });
}
