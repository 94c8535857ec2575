import type { Command } from 'commander';
import type { Principal } from '../auth/guard.ts';
import { previewUserRemoval, removeUserFromAcls, type UserRemoval } from '../acl/user-removal.ts';
import { USER_ID_MAX } from '../acl/schemas.ts';
import { cliChangeSource, commandGroup, openContext, printResult, requireCustomer, UsageError } from './context.ts';

function userIdOf(text: string): number {
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) > USER_ID_MAX) throw new UsageError(`--user: expected a user id (0–${USER_ID_MAX}), got "${text}"`);
  return Number(text);
}

const describe = (removal: UserRemoval) => {
  const head = removal.applied
    ? `removed user ${removal.userId} from ${removal.acls.length} ACL${removal.acls.length === 1 ? '' : 's'} of ${removal.customer}`
    : `user ${removal.userId} is in ${removal.overLimit ? 'more than ' : ''}${removal.acls.length} ACL${removal.acls.length === 1 ? '' : 's'} of ${removal.customer}${removal.acls.length > 0 ? ' (nothing changed: run again with --apply to remove it from them)' : ''}`;
  const lines = removal.acls.map((acl) => `  ${acl.id}${acl.name === null ? '' : ` ${acl.name}`}${acl.okmSerial === null ? '' : ` (OKM ${acl.okmSerial})`}`);
  return [head, ...lines].join('\n');
};

/** keyfleet acl remove-user: offboarding, the preview by default, the removal with --apply (one transaction). */
export function register(program: Command): void {
  commandGroup(program, 'acl', 'access control lists')
    .command('remove-user')
    .description('remove a user from every ACL of a customer, in one transaction; without --apply, list the ACLs and OKMs it would change')
    .requiredOption('--customer <name>', 'whose ACLs')
    .requiredOption('--user <id>', 'the user id, as the ACLs name it')
    .option('--apply', 'remove the user (without it, nothing changes)')
    .option('--json', 'print one JSON object')
    .action(async (options: { customer: string; user: string; apply?: boolean; json?: boolean }) => {
      const userId = userIdOf(options.user);
      const context = await openContext();
      try {
        await requireCustomer(context.db, options.customer);
        const source = cliChangeSource();
        const principal: Principal = { subject: `cli:${source.actor.id}`, actor: source.actor, customer: null, scopes: new Set(['admin']), isAdmin: true };
        const request = { db: context.db, principal, now: Date.now(), source, locking: context.dialect };
        const max = context.settings.bulkActionMax;
        const removal = options.apply ? await removeUserFromAcls(request, options.customer, userId, max) : await previewUserRemoval(request, options.customer, userId, max);
        printResult(
          options.json,
          {
            customer: removal.customer,
            user_id: removal.userId,
            acls: removal.acls.map((acl) => ({ id: acl.id, name: acl.name, okm_id: acl.okmSerial })),
            okm_ids: removal.okmSerials,
            over_limit: removal.overLimit,
            applied: removal.applied,
          },
          describe(removal),
        );
      } finally {
        await context.close();
      }
    });
}
