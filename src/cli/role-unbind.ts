import type { Command } from 'commander';
import { deleteRoleBinding } from '../auth/role-bindings.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'role', 'bind people and IdP groups to roles')
    .command('unbind')
    .description('remove a role binding: the people it bound lose the role within a second')
    .argument('<id>', 'the binding id printed by role bind and role list')
    .option('--json', 'print one JSON object')
    .action(async (id: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const removed = await deleteRoleBinding(context.db, id, { now: Date.now(), source: cliChangeSource() });
        printResult(options.json, { removed: { id: removed.id, kind: removed.kind, value: removed.value, role: removed.role, customer: removed.customer?.name ?? null } }, `unbound: ${removed.kind} ${removed.value} from ${removed.role}`);
      } finally {
        await context.close();
      }
    });
}
