import type { Command } from 'commander';
import { listRoleBindings } from '../auth/role-bindings.ts';
import { ROLES } from '../auth/roles.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'role', 'bind people and IdP groups to roles')
    .command('list')
    .description('list the role bindings, oldest first, and the roles with their scopes')
    .option('--json', 'print one JSON object')
    .action(async (options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const bindings = (await listRoleBindings(context.db)).map((binding) => ({ ...binding, customer: binding.customer?.name ?? null, created_at: new Date(binding.created_at).toISOString() }));
        const lines = bindings.map((binding) => `${binding.id}  ${binding.kind} ${binding.value}  → ${binding.role}  ${binding.customer ?? 'every customer'}`);
        printResult(options.json, { bindings, roles: ROLES }, bindings.length === 0 ? 'no role bindings: nobody can sign in through single sign-on yet' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
