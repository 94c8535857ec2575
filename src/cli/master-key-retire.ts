import type { Command } from 'commander';
import { retirePreviousKey } from '../secrets/rotate-master-key.ts';
import { UsageError, cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'master-key', 'manage the keys that encrypt private keys and secrets at rest')
    .command('retire')
    .description('reseal what is left under the previous data key, then delete it (refused until every server has had time to stop sealing under it)')
    .option('--yes', 'do it (without --yes the command only says what it would do)')
    .option('--json', 'print one JSON object')
    .action(async (options: { yes?: boolean; json?: boolean }) => {
      if (!options.yes) {
        throw new UsageError('master-key retire would delete the previous data key once nothing is sealed under it; run it again with --yes');
      }
      const context = await openContext();
      try {
        const retired = await retirePreviousKey(context.db, context.keyRing, cliChangeSource());
        printResult(
          options.json,
          { retired: retired.kid, resealed: retired.resealed },
          `${Object.entries(retired.resealed).map(([column, count]) => `${column}: ${count} resealed`).join('\n')}\ndata key ${retired.kid} retired`,
        );
      } finally {
        await context.close();
      }
    });
}
