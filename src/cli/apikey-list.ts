import type { Command } from 'commander';
import { commandGroup, openContext, printResult, requireCustomer } from './context.ts';

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function register(program: Command): void {
  commandGroup(program, 'apikey', 'manage DLock API keys')
    .command('list')
    .description('list the DLock API keys (their ids, never the keys), by customer then creation')
    .option('--customer <name>', "only this customer's keys")
    .option('--json', 'print one JSON object')
    .action(async (options: { customer?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const { db } = context;
        if (options.customer !== undefined) await requireCustomer(db, options.customer);
        let query = db
          .selectFrom('api_keys')
          .innerJoin('customers', 'customers.id', 'api_keys.customer_id')
          .select(['api_keys.id', 'customers.name as customer', 'api_keys.label', 'api_keys.created_at', 'api_keys.last_used_at', 'api_keys.revoked_at'])
          .orderBy('customers.name')
          .orderBy('api_keys.created_at')
          .orderBy('api_keys.id');
        if (options.customer !== undefined) query = query.where('customers.name', '=', options.customer);
        const keys = (await query.execute()).map((row) => ({
          id: row.id,
          customer: row.customer,
          label: row.label,
          created_at: isoOrNull(row.created_at),
          last_used_at: isoOrNull(row.last_used_at),
          revoked_at: isoOrNull(row.revoked_at),
        }));
        const lines = keys.map(
          (key) => `${key.id}  ${key.customer}  ${key.revoked_at ? `revoked ${key.revoked_at}` : 'active'}  last used ${key.last_used_at ?? 'never'}${key.label ? `  ${key.label}` : ''}`,
        );
        printResult(options.json, { keys }, keys.length === 0 ? 'no API keys' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
