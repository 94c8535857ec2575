import type { Command } from 'commander';
import { ensureActiveSigningKey, rotateSigningKey } from '../auth/signing-keys.ts';
import { cliChangeSource, commandGroup, durationOption, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'signing-key', 'manage the key that signs the deployment’s JWTs')
    .command('rotate')
    .description('make a new signing key active; the previous one verifies until its grace ends')
    .option('--grace <duration>', 'how long tokens signed by the previous key stay valid: 30s, 15m, 1h, 7d', '1d')
    .option('--json', 'print one JSON object')
    .action(async (options: { grace: string; json?: boolean }) => {
      const graceSeconds = Math.ceil(durationOption('--grace', options.grace) / 1000);
      const context = await openContext();
      try {
        await ensureActiveSigningKey(context.db, context.keyRing);
        const rotated = await rotateSigningKey(context.db, context.keyRing, graceSeconds, cliChangeSource());
        const until = new Date(rotated.previousVerifiesUntil).toISOString();
        printResult(
          options.json,
          { kid: rotated.kid, previous_kid: rotated.previous, previous_verifies_until: until },
          `active key: ${rotated.kid}\nprevious key ${rotated.previous} verifies until ${until}`,
        );
      } finally {
        await context.close();
      }
    });
}
