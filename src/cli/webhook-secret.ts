import type { Command } from 'commander';
import { recordChange } from '../audit/trail.ts';
import { findCustomerByName } from '../customers/repository.ts';
import { notFound } from '../http/errors.ts';
import { DEPLOYMENT_OWNER, customerOwner, rotateWebhookSecret, webhookSecrets, type WebhookSecrets } from '../webhooks/secrets.ts';
import { cliChangeSource, commandGroup, durationOption, openContext, printResult, type CliContext } from './context.ts';

interface SecretOptions {
  customer?: string;
  json?: boolean;
}

/** The customer's secret owner, or the deployment's (OKMs with no customer) when no customer is named. */
async function ownerFor(context: CliContext, customer: string | undefined): Promise<string> {
  if (customer === undefined) return DEPLOYMENT_OWNER;
  const found = await findCustomerByName(context.db, customer);
  if (!found) throw notFound(`customer ${customer} does not exist`);
  return customerOwner(found.id);
}

function print(json: boolean | undefined, customer: string | undefined, secrets: WebhookSecrets): void {
  const previousUntil = secrets.previous ? new Date(secrets.previous.validUntil).toISOString() : null;
  printResult(
    json,
    { customer: customer ?? null, secret: secrets.current, previous_secret: secrets.previous?.secret ?? null, previous_valid_until: previousUntil },
    secrets.previous ? `${secrets.current}\nprevious: ${secrets.previous.secret} (still signs until ${previousUntil})` : secrets.current,
  );
}

async function withOwner(options: SecretOptions, run: (context: CliContext, owner: string) => Promise<WebhookSecrets>): Promise<void> {
  const context = await openContext();
  try {
    print(options.json, options.customer, await run(context, await ownerFor(context, options.customer)));
  } finally {
    await context.close();
  }
}

/**
 * Rotates the owner's secret and appends its webhook_secret.rotated entry in one transaction.
 * The entry names the owner and how long the replaced secret still signs, never a secret.
 */
function rotateRecorded(context: CliContext, owner: string, customer: string | undefined, overlapMs: number): Promise<WebhookSecrets> {
  const now = Date.now();
  return context.db.transaction().execute(async (trx) => {
    const rotated = await rotateWebhookSecret(trx, context.keyRing, owner, now, overlapMs);
    const previousValidUntil = rotated.previous === null ? null : new Date(rotated.previous.validUntil).toISOString();
    const change = { action: 'webhook_secret.rotated', customer: customer ?? null, entity: { type: 'webhook_secret', id: owner }, after: { previous_valid_until: previousValidUntil } } as const;
    await recordChange(trx, cliChangeSource(), change, now);
    return rotated;
  });
}

export function register(program: Command): void {
  const secret = commandGroup(commandGroup(program, 'webhook', 'status event webhooks'), 'secret', 'status event signing secrets (whsec_)');
  secret
    .command('show')
    .description("print the whsec_ secret that signs a customer's status events (made on first use)")
    .option('--customer <name>', 'the customer; omit for the deployment secret (OKMs with no customer)')
    .option('--json', 'print one JSON object')
    .action((options: SecretOptions) => withOwner(options, (context, owner) => webhookSecrets(context.db, context.keyRing, owner, Date.now())));
  secret
    .command('rotate')
    .description('replace the secret; the old one keeps signing (a second signature) during the overlap')
    .option('--customer <name>', 'the customer; omit for the deployment secret (OKMs with no customer)')
    .option('--overlap <duration>', 'how long the old secret still signs: 0s, 30m, 24h, 7d', '24h')
    .option('--json', 'print one JSON object')
    .action((options: SecretOptions & { overlap: string }) => {
      const overlapMs = durationOption('--overlap', options.overlap, 0);
      return withOwner(options, (context, owner) => rotateRecorded(context, owner, options.customer, overlapMs));
    });
}
