import type { Command } from 'commander';
import { createRoleBinding } from '../auth/role-bindings.ts';
import { ROLE_NAMES } from '../auth/roles.ts';
import { cliChangeSource, commandGroup, openContext, printResult, UsageError } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'role', 'bind people and IdP groups to roles')
    .command('bind')
    .description('bind an IdP group, an email or a subject to a role, for every customer or one')
    .argument('<role>', ROLE_NAMES.join(' | '))
    .option('--group <name>', 'an IdP group (the OIDC_GROUPS_CLAIM claim)')
    .option('--email <address>', 'one person, by the email of their ID token')
    .option('--subject <sub>', 'one person, by their subject at the provider')
    .option('--customer <name>', 'the role for this customer only (default: every customer)')
    .option('--json', 'print one JSON object')
    .action(async (role: string, options: { group?: string; email?: string; subject?: string; customer?: string; json?: boolean }) => {
      const given = (['group', 'email', 'subject'] as const).filter((kind) => options[kind] !== undefined);
      if (given.length !== 1) throw new UsageError('give exactly one of --group, --email, --subject');
      const kind = given[0]!;
      const context = await openContext();
      try {
        const binding = await createRoleBinding(
          context.db,
          { kind, value: options[kind]!, role, ...(options.customer === undefined ? {} : { customer: options.customer }) },
          { now: Date.now(), source: cliChangeSource() },
        );
        const view = { ...binding, customer: binding.customer?.name ?? null, created_at: new Date(binding.created_at).toISOString() };
        printResult(options.json, { binding: view }, `bound: ${kind} ${binding.value} → ${binding.role} for ${view.customer ?? 'every customer'} (id ${binding.id})`);
      } finally {
        await context.close();
      }
    });
}
