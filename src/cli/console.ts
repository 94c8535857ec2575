import type { Command } from 'commander';
import { printResult, UsageError } from './context.ts';
import { issueTokenFromOptions } from './token-issue.ts';

/** Everything a customer's token may hold (contract §12.2); an operator's adds admin. */
export const CUSTOMER_CONSOLE_SCOPES = 'okm:read okm:write acl:read acl:create acl:delete lock:read';
export const OPERATOR_CONSOLE_SCOPES = `admin ${CUSTOMER_CONSOLE_SCOPES}`;

interface ConsoleOptions {
  customer?: string;
  scope?: string;
  ttl: string;
  url?: string;
  json?: boolean;
}

/** Where the console is reached: --url, else PUBLIC_BASE_URL, else this host's PORT. */
async function baseUrl(url: string | undefined): Promise<string> {
  if (url !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol)) throw new UsageError(`--url: expected an http(s) URL such as https://keyfleet.example.com, got "${url}"`);
    return url.replace(/\/+$/, '');
  }
  const { loadSettings } = await import('../config/settings.ts');
  const settings = loadSettings();
  return settings.publicBaseUrl ?? `http://localhost:${settings.port}`;
}

export function register(program: Command): void {
  program
    .command('console')
    .description('print a sign-in URL of the operator console, with a new token in its fragment')
    .option('--customer <name>', 'sign in as this customer; omit for an operator (admin) sign-in')
    .option('--scope <scopes>', `space-separated; default "${CUSTOMER_CONSOLE_SCOPES}", with admin when no --customer`)
    .option('--ttl <duration>', 'how long the sign-in lasts: 30m, 8h, 7d', '8h')
    .option('--url <base>', 'the server as the browser reaches it; default PUBLIC_BASE_URL, else http://localhost:PORT')
    .option('--json', 'print one JSON object: {"url","expires_at"}')
    .action(async (options: ConsoleOptions) => {
      const base = await baseUrl(options.url);
      const scope = options.scope ?? (options.customer === undefined ? OPERATOR_CONSOLE_SCOPES : CUSTOMER_CONSOLE_SCOPES);
      const { token, expiresAt } = await issueTokenFromOptions({ customer: options.customer, scope, ttl: options.ttl });
      // In the fragment: a browser never sends it, so the token reaches no server or proxy log.
      const url = `${base}/console/#token=${token}`;
      printResult(options.json, { url, expires_at: expiresAt }, url);
    });
}
