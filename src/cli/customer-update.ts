import type { Command } from 'commander';
import { updateCustomerSettings } from '../customers/service.ts';
import { parseRetryPolicy, retryPolicyToWire, type RetryPolicy } from '../shared/retry-policy.ts';
import { UsageError, cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

/** `--firmware-retry-policy`: a policy as JSON, or "default" for the fleet's (FIRMWARE_RETRY_POLICY). */
function retryPolicyOption(text: string): RetryPolicy | null {
  if (text === 'default') return null;
  const policy = parseRetryPolicy(text);
  if ('error' in policy) throw new UsageError(`--firmware-retry-policy: ${policy.error}`);
  return policy;
}

export function register(program: Command): void {
  commandGroup(program, 'customer', 'manage customers (tenants)')
    .command('update')
    .description("change a customer's settings")
    .argument('<name>', 'customer name')
    .option('--time-zone <zone>', 'IANA time zone of its stores (Europe/Berlin), for rollout maintenance windows; "UTC" for none')
    .option(
      '--firmware-retry-policy <json>',
      'retry policy of firmware offers to its OKMs, e.g. \'{"offers": 3, "backoff_polls": [1, 2, 4, 8], "max_backoff_polls": 32}\'; {"offers": 0}: strict seed order; "default": the fleet\'s',
    )
    .option('--json', 'print one JSON object')
    .action(async (name: string, options: { json?: boolean; timeZone?: string; firmwareRetryPolicy?: string }) => {
      if (options.timeZone === undefined && options.firmwareRetryPolicy === undefined) throw new UsageError('expected --time-zone or --firmware-retry-policy');
      const policy = options.firmwareRetryPolicy === undefined ? undefined : retryPolicyOption(options.firmwareRetryPolicy);
      const context = await openContext();
      try {
        await updateCustomerSettings(context.db, cliChangeSource(), name, {
          ...(options.timeZone === undefined ? {} : { timeZone: options.timeZone }),
          ...(policy === undefined ? {} : { retryPolicy: policy }),
        });
        const result = {
          name,
          ...(options.timeZone === undefined ? {} : { time_zone: options.timeZone }),
          ...(policy === undefined ? {} : { firmware_retry_policy: policy && retryPolicyToWire(policy) }),
        };
        printResult(
          options.json,
          result,
          Object.entries(result)
            .map(([field, value]) => `${field}: ${typeof value === 'string' ? value : value === null ? 'default' : JSON.stringify(value)}`)
            .join('\n'),
        );
      } finally {
        await context.close();
      }
    });
}
