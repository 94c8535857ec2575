import type { Command } from 'commander';
import { acceptPendingOkmRecorded } from '../okm/pending-service.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'okm', 'manage OKMs')
    .command('accept')
    .description('turn a pending OKM into an OKM; its next poll is served')
    .argument('<serial>', 'the serial number, as keyfleet okm pending lists it')
    .option('--customer <name>', 'the customer that gets the OKM; without it, it belongs to none yet')
    .option('--json', 'print one JSON object')
    .action(async (serial: string, options: { customer?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const accepted = await acceptPendingOkmRecorded(context.db, cliChangeSource(), serial, options.customer, Date.now());
        printResult(
          options.json,
          { serial_number: accepted.serialNumber, customer: accepted.customer, accepted_at: new Date(accepted.acceptedAt).toISOString() },
          `accepted: ${accepted.serialNumber}${accepted.customer === null ? '' : ` (customer ${accepted.customer})`}`,
        );
      } finally {
        await context.close();
      }
    });
}
