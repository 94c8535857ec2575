import type { Command } from 'commander';
import { listSigningKeys } from '../auth/signing-keys.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'signing-key', 'manage the key that signs the deployment’s JWTs')
    .command('list')
    .description('the signing keys: the active one, those still verifying, those retired')
    .option('--json', 'print one JSON object')
    .action(async (options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const now = Date.now();
        const keys = (await listSigningKeys(context.db)).map((key) => ({
          kid: key.kid,
          state: key.retiredAt === null ? 'active' : key.retiredAt > now ? 'verifying' : 'retired',
          created_at: new Date(key.createdAt).toISOString(),
          verifies_until: key.retiredAt === null ? null : new Date(key.retiredAt).toISOString(),
        }));
        printResult(options.json, { keys }, keys.map((key) => `${key.kid}  ${key.state}${key.verifies_until ? ` until ${key.verifies_until}` : ''}`).join('\n'));
      } finally {
        await context.close();
      }
    });
}
