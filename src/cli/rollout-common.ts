import os from 'node:os';
import type { Command } from 'commander';
import type { Actor } from '../auth/actor.ts';
import type { Principal } from '../auth/guard.ts';
import { rolloutEventSink } from '../rollouts/events.ts';
import { MEMBER_STATES, memberTotal } from '../rollouts/model.ts';
import type { RolloutRequest } from '../rollouts/service.ts';
import type { RolloutView } from '../rollouts/schemas.ts';
import { commandGroup, openContext, printResult, UsageError, type CliContext } from './context.ts';

export const rolloutGroup = (program: Command) => commandGroup(program, 'rollout', 'staged firmware rollouts');

/**
 * The CLI acts as an operator: admin, named after the account that runs it (a rollout records
 * who created it, the audit trail who changed it, through no request).
 */
export function operatorRequest(context: CliContext, customerName?: string): RolloutRequest {
  const actor: Actor = { kind: 'cli', id: os.userInfo().username, name: os.userInfo().username };
  const principal: Principal = { subject: `cli:${actor.id}`, actor, customer: null, scopes: new Set(['admin']), isAdmin: true };
  return { db: context.db, principal, customerName, now: Date.now(), emit: rolloutEventSink, source: { actor, requestId: null, ip: null, userAgent: null } };
}

/** A rollout's id argument: a positive integer, else a usage error (exit 2). */
export function rolloutId(text: string): number {
  const id = Number(text);
  if (!/^[1-9][0-9]{0,9}$/.test(text) || id > 2_147_483_647) throw new UsageError(`id: expected a rollout id (a positive integer), got "${text}"`);
  return id;
}

const bar = (part: number, whole: number, width = 20) => {
  const filled = whole === 0 ? 0 : Math.round((part / whole) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
};

/** A rollout's own retry policy in words: "3 offers, then held back 1, 2, 4, 8 polls (at most 32)". */
function retryPolicySentence(policy: NonNullable<RolloutView['retry_policy']>): string {
  if (policy.offers === 0) return 'never held back (strict seed order)';
  return `${policy.offers} offer${policy.offers === 1 ? '' : 's'}, then held back ${policy.backoff_polls.join(', ')} polls (at most ${policy.max_backoff_polls})`;
}

/** One line per group with a progress bar, then the totals: what a person reads at a glance. */
export function rolloutTable(rollout: RolloutView): string {
  const header = [
    `rollout ${rollout.id}: ${rollout.kind} ${rollout.version} for ${rollout.customer ?? 'every customer'}, ${rollout.state}${rollout.state_reason && rollout.state !== 'running' ? ` (${rollout.state_reason})` : ''}`,
    `thresholds: success ${rollout.success_threshold}%, error ${rollout.error_threshold}%, update timeout ${rollout.update_timeout}, auto advance ${rollout.auto_advance ? 'on' : 'off'}` +
      (rollout.maintenance_window ? `, window ${rollout.maintenance_window.from}-${rollout.maintenance_window.to} (${rollout.maintenance_window.time_zone})` : '') +
      (rollout.approval_required ? `, approval ${rollout.approved_by ? `by ${rollout.approved_by}` : 'pending'}` : ''),
    ...(rollout.retry_policy === null ? [] : [`retry policy: ${retryPolicySentence(rollout.retry_policy)}`]),
    '',
  ];
  const rows = [['group', 'percent', 'state', 'okms', ...MEMBER_STATES, 'progress']];
  rollout.groups.forEach((group, index) => {
    rows.push([String(index + 1), `${group.percent}%`, group.state, String(group.okms), ...MEMBER_STATES.map((state) => String(group.counts[state])), `${bar(group.counts.updated, group.okms)} ${group.okms === 0 ? 0 : Math.floor((group.counts.updated * 100) / group.okms)}%`]);
  });
  const { updated } = rollout.totals;
  const total = memberTotal(rollout.totals);
  rows.push(['total', '', '', String(total), ...MEMBER_STATES.map((state) => String(rollout.totals[state])), `${bar(updated, total)} ${total === 0 ? 0 : Math.floor((updated * 100) / total)}%`]);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const numeric = (column: number) => column >= 3 && column < 4 + MEMBER_STATES.length;
  const lines = rows.map((row) => row.map((cell, column) => (numeric(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd());
  return [...header, ...lines].join('\n');
}

/** `keyfleet rollout <action> ID`: one state change through the service, the rollout printed as `show` does. */
export function registerRolloutAction(
  program: Command,
  name: string,
  description: string,
  action: (request: RolloutRequest, id: number) => Promise<RolloutView>,
): void {
  rolloutGroup(program)
    .command(name)
    .description(description)
    .argument('<id>', 'rollout id')
    .option('--json', 'print one JSON object')
    .action(async (id: string, options: { json?: boolean }) => {
      const rollout = rolloutId(id);
      const context = await openContext();
      try {
        const view = await action(operatorRequest(context), rollout);
        printResult(options.json, { rollout: view }, rolloutTable(view));
      } finally {
        await context.close();
      }
    });
}
