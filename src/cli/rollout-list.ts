import type { Command } from 'commander';
import { listRolloutViews } from '../rollouts/service.ts';
import { ROLLOUT_STATES, type RolloutState } from '../rollouts/model.ts';
import { openContext, printResult, UsageError } from './context.ts';
import { operatorRequest, rolloutGroup } from './rollout-common.ts';

export function register(program: Command): void {
  rolloutGroup(program)
    .command('list')
    .description('list the rollouts, newest first')
    .option('--customer <name>', "only this customer's")
    .option('--state <state>', `only in this state: ${ROLLOUT_STATES.join(', ')}`)
    .option('--json', 'print one JSON object')
    .action(async (options: { customer?: string; state?: string; json?: boolean }) => {
      if (options.state !== undefined && !(ROLLOUT_STATES as readonly string[]).includes(options.state)) {
        throw new UsageError(`--state: expected one of ${ROLLOUT_STATES.join(', ')}, got "${options.state}"`);
      }
      const context = await openContext();
      try {
        const { items } = await listRolloutViews(operatorRequest(context), { customer: options.customer, state: options.state as RolloutState | undefined, results_per_page: 100 });
        const lines = items.map((rollout) => {
          const { updated, scheduled, offered, failed } = rollout.totals;
          const group = rollout.current_group === null ? '-' : `${rollout.current_group + 1}/${rollout.groups.length}`;
          return `${rollout.id}  ${rollout.kind} ${rollout.version}  ${rollout.customer ?? '(every customer)'}  ${rollout.state}  group ${group}  updated ${updated}/${updated + scheduled + offered + failed}  failed ${failed}`;
        });
        printResult(options.json, { rollouts: items }, lines.length === 0 ? 'no rollouts' : lines.join('\n'));
      } finally {
        await context.close();
      }
    });
}
