import type { Command } from 'commander';
import type { Principal } from '../auth/guard.ts';
import { isHttpUrl } from '../shared/http-url.ts';
import { applyBulkAction, previewBulkAction, type BulkSelection } from '../okm/bulk-actions.ts';
import { cliChangeSource, commandGroup, openContext, printResult, requireCustomer, UsageError } from './context.ts';

const describe = (url: string, selection: BulkSelection) => {
  const count = `${selection.overLimit ? 'more than ' : ''}${selection.serialNumbers.length} OKM${selection.serialNumbers.length === 1 ? '' : 's'}`;
  const head = selection.applied
    ? `removed ${url} from ${count}`
    : `${count} hold ${url}${selection.serialNumbers.length > 0 ? ' (nothing changed: run again with --apply to remove it)' : ''}`;
  return [head, ...selection.serialNumbers.map((serial) => `  ${serial}`)].join('\n');
};

/**
 * keyfleet okm remove-subscriber-url: a dead status subscriber taken out of every OKM that holds
 * it (or of one customer's), in one transaction, as POST /api/v1/okm-bulk-actions does;
 * without --apply, the OKMs it would change.
 */
export function register(program: Command): void {
  commandGroup(program, 'okm', 'manage OKMs')
    .command('remove-subscriber-url')
    .description('remove a status subscriber URL from every OKM that holds it, in one transaction; without --apply, list those OKMs')
    .argument('<url>', 'the URL, exactly as subscribe_urls.status holds it')
    .option('--customer <name>', "only this customer's OKMs")
    .option('--apply', 'remove it (without it, nothing changes)')
    .option('--json', 'print one JSON object')
    .action(async (url: string, options: { customer?: string; apply?: boolean; json?: boolean }) => {
      if (!isHttpUrl(url) || url.length > 2048) throw new UsageError(`url: expected an http or https URL, got "${url}"`);
      const context = await openContext();
      try {
        if (options.customer !== undefined) await requireCustomer(context.db, options.customer);
        const source = cliChangeSource();
        const principal: Principal = { subject: `cli:${source.actor.id}`, actor: source.actor, customer: null, scopes: new Set(['admin']), isAdmin: true };
        const request = { db: context.db, settings: context.settings, principal, customerName: options.customer, now: Date.now(), source };
        const action = { type: 'remove_subscriber_url' as const, url };
        const limit = context.settings.bulkActionMax;
        const selection = options.apply ? await applyBulkAction(request, {}, action, limit) : await previewBulkAction(request, {}, action, limit);
        printResult(
          options.json,
          { url, count: selection.serialNumbers.length, serial_numbers: selection.serialNumbers, limit, over_limit: selection.overLimit, applied: selection.applied },
          describe(url, selection),
        );
      } finally {
        await context.close();
      }
    });
}
