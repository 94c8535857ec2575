import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import { KEY_SET_MAX_AGE_MS, retireSigningKey } from '../auth/signing-keys.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

/** Timer slack on top of the servers' key-set age. */
const RETIREMENT_MARGIN_MS = 100;

export function register(program: Command): void {
  commandGroup(program, 'signing-key', 'manage the key that signs the deployment’s JWTs')
    .command('retire')
    .description(`stop a previous signing key from verifying tokens: returns once no running server accepts them (about ${KEY_SET_MAX_AGE_MS / 1000} s)`)
    .argument('<kid>', 'the key id, as `keyfleet signing-key list` shows it')
    .option('--json', 'print one JSON object')
    .action(async (kid: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        await retireSigningKey(context.db, kid, cliChangeSource());
        // Servers verify with keys read at most KEY_SET_MAX_AGE_MS ago: after that wait, none accepts the key.
        await sleep(KEY_SET_MAX_AGE_MS + RETIREMENT_MARGIN_MS);
        printResult(options.json, { kid, retired: true }, `retired ${kid}: no server accepts its tokens any more`);
      } finally {
        await context.close();
      }
    });
}
