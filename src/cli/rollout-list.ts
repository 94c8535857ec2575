import type { Command } from 'commander';
import { InvalidCursorError } from '../db/cursor-pages.ts';
import { listRolloutViews } from '../rollouts/service.ts';
import { memberTotal, ROLLOUT_STATES, type RolloutState } from '../rollouts/model.ts';
import { openContext, printResult, UsageError } from './context.ts';
import { operatorRequest, rolloutGroup } from './rollout-common.ts';

const PER_PAGE = 100;

export function register(program: Command): void {
  rolloutGroup(program)
    .command('list')
    .description(`list the rollouts, newest first, ${PER_PAGE} a page`)
    .option('--customer <name>', "only this customer's")
    .option('--state <state>', `only in this state: ${ROLLOUT_STATES.join(', ')}`)
    .option('--cursor <cursor>', 'the next page: the cursor the previous page printed')
    .option('--json', 'print one JSON object')
    .action(async (options: { customer?: string; state?: string; cursor?: string; json?: boolean }) => {
      if (options.state !== undefined && !(ROLLOUT_STATES as readonly string[]).includes(options.state)) {
        throw new UsageError(`--state: expected one of ${ROLLOUT_STATES.join(', ')}, got "${options.state}"`);
      }
      const context = await openContext();
      try {
        const query = { customer: options.customer, state: options.state as RolloutState | undefined, limit: PER_PAGE, cursor: options.cursor };
        const page = await listRolloutViews(operatorRequest(context), query).catch((error: unknown) => {
          if (error instanceof InvalidCursorError) throw new UsageError('--cursor: not a cursor of this list; pass the one a page printed, unchanged');
          throw error;
        });
        const lines = page.items.map((rollout) => {
          const { updated, failed } = rollout.totals;
          const group = rollout.current_group === null ? '-' : `${rollout.current_group + 1}/${rollout.groups.length}`;
          return `${rollout.id}  ${rollout.kind} ${rollout.version}  ${rollout.customer ?? '(every customer)'}  ${rollout.state}  group ${group}  updated ${updated}/${memberTotal(rollout.totals)}  failed ${failed}`;
        });
        if (lines.length === 0) lines.push(options.cursor === undefined ? 'no rollouts' : 'no more rollouts');
        if (page.nextCursor !== null) lines.push(`more: keyfleet rollout list --cursor ${page.nextCursor}${options.customer === undefined ? '' : ` --customer ${options.customer}`}${options.state === undefined ? '' : ` --state ${options.state}`}`);
        printResult(options.json, { rollouts: page.items, next_cursor: page.nextCursor }, lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
