import type { ErrorObject } from 'ajv';
import type { Command } from 'commander';
import { describeValidationError, validatorCompiler } from '../http/validation.ts';
import { CreateRolloutBody } from '../rollouts/schemas.ts';
import { createRollout } from '../rollouts/service.ts';
import { parseRetryPolicy, retryPolicyToWire } from '../shared/retry-policy.ts';
import { openContext, printResult, UsageError } from './context.ts';
import { operatorRequest, rolloutGroup, rolloutTable } from './rollout-common.ts';

interface RolloutCreateOptions {
  groups: string;
  customer?: string;
  successThreshold?: string;
  errorThreshold?: string;
  updateTimeout?: string;
  autoAdvance: boolean;
  startAt?: string;
  window?: string;
  approvalRequired?: boolean;
  onlyVersion?: string;
  serials?: string;
  retryPolicy?: string;
  json?: boolean;
}

const validateBody = validatorCompiler({ schema: CreateRolloutBody, method: 'POST', url: '', httpPart: 'body' });

const integerOption = (text: string | undefined) => (text === undefined ? undefined : /^-?\d+$/.test(text) ? Number(text) : text);
const list = (text: string) => text.split(',').map((item) => item.trim());

/** The --retry-policy JSON as the body's retry_policy, read as a setting is (parseRetryPolicy): its words name the field. */
function retryPolicyOption(text: string | undefined) {
  if (text === undefined) return {};
  const policy = parseRetryPolicy(text);
  if ('error' in policy) throw new UsageError(`--retry-policy: ${policy.error}`);
  return { retry_policy: retryPolicyToWire(policy) };
}

/** The API's body from the command line; the API's schema judges it, so both refuse the same values with the same words. */
function bodyOf(kind: string, version: string, options: RolloutCreateOptions): CreateRolloutBody {
  const window = options.window?.split('-');
  const body = {
    kind,
    version,
    ...(options.customer === undefined ? {} : { customer: options.customer }),
    groups: list(options.groups).map((percent) => ({ percent: integerOption(percent) })),
    ...(options.successThreshold === undefined ? {} : { success_threshold: integerOption(options.successThreshold) }),
    ...(options.errorThreshold === undefined ? {} : { error_threshold: integerOption(options.errorThreshold) }),
    ...(options.updateTimeout === undefined ? {} : { update_timeout: options.updateTimeout }),
    auto_advance: options.autoAdvance,
    ...(options.startAt === undefined ? {} : { start_at: options.startAt }),
    ...(window === undefined ? {} : { maintenance_window: { from: window[0] ?? '', to: window[1] ?? '' } }),
    ...(options.approvalRequired ? { approval_required: true } : {}),
    ...retryPolicyOption(options.retryPolicy),
    ...(options.onlyVersion === undefined && options.serials === undefined
      ? {}
      : { filter: { ...(options.onlyVersion === undefined ? {} : { firmware_version: options.onlyVersion }), ...(options.serials === undefined ? {} : { serial_numbers: list(options.serials) }) } }),
  };
  if (validateBody(body) !== true) {
    const [error] = (validateBody.errors ?? []) as ErrorObject[];
    throw new UsageError(error ? describeValidationError('body', error) : 'invalid rollout');
  }
  return body as CreateRolloutBody;
}

export function register(program: Command): void {
  rolloutGroup(program)
    .command('create')
    .description('create a staged firmware rollout (state ready; start it with rollout start)')
    .argument('<kind>', 'kas, batch_key or wireless_key')
    .argument('<version>', 'a catalog release of the kind')
    .requiredOption('--groups <percents>', 'cumulative percents of the OKMs per group: 1,10,100')
    .option('--customer <name>', "the customer whose OKMs are updated (default: every customer's)")
    .option('--success-threshold <percent>', 'a group passes when this % of it has updated (default 95)')
    .option('--error-threshold <percent>', 'pause when more than this % of a started group has failed (default 5)')
    .option('--update-timeout <duration>', 'an offered OKM that polls on without updating this long has failed (default 1h)')
    .option('--no-auto-advance', 'start each next group by hand (rollout advance)')
    .option('--start-at <time>', 'start by itself then (ISO 8601)')
    .option('--window <from-to>', "offer only in this daily window of the customer's time zone: 22:00-06:00")
    .option('--approval-required', 'another operator must approve it (keyfleet rollout approve, or POST /api/v1/rollouts/{id}/approve) before it starts')
    .option('--only-version <version>', 'only OKMs that last reported this version of the kind')
    .option('--serials <list>', 'only these OKMs (comma-separated serial numbers)')
    .option('--retry-policy <json>', 'the retry policy of its offers, before the customer\'s and the fleet default: {"offers": 3, "backoff_polls": [1, 2, 4, 8], "max_backoff_polls": 32}')
    .option('--json', 'print one JSON object')
    .action(async (kind: string, version: string, options: RolloutCreateOptions) => {
      const body = bodyOf(kind, version, options);
      const context = await openContext();
      try {
        const rollout = await createRollout(operatorRequest(context), body);
        printResult(options.json, { rollout }, rolloutTable(rollout));
      } finally {
        await context.close();
      }
    });
}
