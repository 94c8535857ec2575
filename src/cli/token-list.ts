import type { Command } from 'commander';
import { listTokens } from '../auth/api-tokens.ts';
import { commandGroup, openContext, printResult, requireCustomer } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'token', 'issue, list and revoke API tokens')
    .command('list')
    .description('list the API tokens this deployment signed (ids and names, never the tokens), newest first')
    .option('--customer <name>', "only this customer's tokens")
    .option('--all', 'expired tokens too')
    .option('--json', 'print one JSON object')
    .action(async (options: { customer?: string; all?: boolean; json?: boolean }) => {
      const context = await openContext();
      try {
        const { db } = context;
        let customerId: number | undefined;
        if (options.customer !== undefined) {
          await requireCustomer(db, options.customer);
          customerId = Number((await db.selectFrom('customers').select('id').where('name', '=', options.customer).executeTakeFirstOrThrow()).id);
        }
        const tokens = await listTokens(db, { now: Date.now(), includeExpired: options.all ?? false, ...(customerId === undefined ? {} : { customerId }) });
        const lines = tokens.map((token) => `${token.id}  ${token.name}  ${token.customer ?? 'every customer'}  ${token.scopes.join(' ')}  ${token.revoked_at ? `revoked ${token.revoked_at}` : `expires ${token.expires_at}`}`);
        printResult(options.json, { tokens }, tokens.length === 0 ? 'no API tokens' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
