import type { Command } from 'commander';
import { setCustomerTimeZone } from '../customers/repository.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'customer', 'manage customers (tenants)')
    .command('update')
    .description("change a customer's settings")
    .argument('<name>', 'customer name')
    .requiredOption('--time-zone <zone>', 'IANA time zone of its stores (Europe/Berlin), for rollout maintenance windows; "UTC" for none')
    .option('--json', 'print one JSON object')
    .action(async (name: string, options: { json?: boolean; timeZone: string }) => {
      const context = await openContext();
      try {
        await setCustomerTimeZone(context.db, name, options.timeZone);
        printResult(options.json, { name, time_zone: options.timeZone }, `name: ${name}\ntime_zone: ${options.timeZone}`);
      } finally {
        await context.close();
      }
    });
}
