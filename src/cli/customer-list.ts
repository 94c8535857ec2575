import type { Command } from 'commander';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'customer', 'manage customers (tenants)')
    .command('list')
    .description('list the customers, by name')
    .option('--json', 'print one JSON object')
    .action(async (options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const rows = await context.db.selectFrom('customers').select(['id', 'name', 'created_at']).orderBy('name').execute();
        const customers = rows.map((row) => ({ id: row.id, name: row.name, created_at: new Date(Number(row.created_at)).toISOString() }));
        printResult(options.json, { customers }, customers.length === 0 ? 'no customers' : customers.map((customer) => `${customer.id}  ${customer.name}`).join('\n'));
      } finally {
        await context.close();
      }
    });
}
