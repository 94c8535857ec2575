import type { Command } from 'commander';
import { issueToken, type IssuedToken } from '../auth/tokens.ts';
import { cliChangeSource, commandGroup, durationOption, openContext, printResult } from './context.ts';

export interface TokenOptions {
  customer?: string;
  /** Space-separated scopes. */
  scope: string;
  /** A duration: 30s, 15m, 1h, 7d. */
  ttl: string;
  /** Who the token stands for (sub): recorded as creator or approver of a rollout. */
  subject?: string;
  /** What the token is for, as token list shows it. */
  name?: string;
}

/** A JWT signed with the deployment key, as `keyfleet token issue` and `keyfleet console` print it. */
export async function issueTokenFromOptions(options: TokenOptions): Promise<IssuedToken> {
  const ttlSeconds = Math.ceil(durationOption('--ttl', options.ttl) / 1000);
  const scopes = options.scope.split(/\s+/).filter((scope) => scope !== '');
  const context = await openContext();
  try {
    return await issueToken(
      context.db,
      context.keyRing,
      context.settings,
      {
        customer: options.customer,
        scopes,
        ttlSeconds,
        subject: options.subject,
        name: options.name,
      },
      cliChangeSource(),
    );
  } finally {
    await context.close();
  }
}

export function register(program: Command): void {
  commandGroup(program, 'token', 'issue, list and revoke API tokens')
    .command('issue')
    .description('print a JWT signed with the deployment key')
    .option('--customer <name>', 'the customer the token acts for; omit for an operator token (needs admin, which acts for every customer and so is refused with --customer)')
    .requiredOption('--scope <scopes>', 'space-separated: acl:read acl:create acl:delete okm:read okm:write lock:read firmware:write rollout:write rollout:approve audit:read admin')
    .option('--ttl <duration>', 'lifetime: 30s, 15m, 1h, 7d (at most 366d)', '1h')
    .option('--name <text>', 'what the token is for, as token list shows it (default: its subject)')
    .option('--subject <name>', 'who the token stands for (sub), e.g. the operator: recorded as creator or approver of a rollout')
    .option('--json', 'print one JSON object')
    .action(async (options: TokenOptions & { json?: boolean }) => {
      const { token, id, expiresAt } = await issueTokenFromOptions(options);
      printResult(options.json, { token, id, expires_at: expiresAt }, token);
    });
}
