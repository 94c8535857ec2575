import type { Command } from 'commander';
import { commandGroup, openContext, printResult, requireCustomer } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('list')
    .description('list the customer intermediate certificates (not their keys), by customer then name')
    .option('--customer <name>', "only this customer's certificates")
    .option('--json', 'print one JSON object')
    .action(async (options: { customer?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const { db } = context;
        if (options.customer !== undefined) await requireCustomer(db, options.customer);
        let query = db
          .selectFrom('intermediate_certificates')
          .innerJoin('customers', 'customers.id', 'intermediate_certificates.customer_id')
          .select([
            'intermediate_certificates.name',
            'customers.name as customer',
            'intermediate_certificates.serial',
            'intermediate_certificates.not_after',
            'intermediate_certificates.imported',
          ])
          .orderBy('customers.name')
          .orderBy('intermediate_certificates.name');
        if (options.customer !== undefined) query = query.where('customers.name', '=', options.customer);
        const certificates = (await query.execute()).map((row) => ({
          name: row.name,
          customer: row.customer,
          serial: row.serial,
          not_after: new Date(Number(row.not_after)).toISOString(),
          imported: Number(row.imported) === 1,
        }));
        const lines = certificates.map((certificate) => `${certificate.name}  ${certificate.customer}  serial ${certificate.serial}  not after ${certificate.not_after}${certificate.imported ? '  imported' : ''}`);
        printResult(options.json, { certificates }, certificates.length === 0 ? 'no certificates' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
