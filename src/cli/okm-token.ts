import type { Command } from 'commander';
import { issueDeviceTokenRecorded, toDeviceTokenRecord } from '../okm/device-tokens.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'okm', 'manage OKMs')
    .command('token')
    .description("print a new device token for an OKM (shown once); it replaces the OKM's earlier token")
    .argument('<serial>', 'the OKM serial number')
    .option('--json', 'print one JSON object')
    .action(async (serial: string, options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const issued = await issueDeviceTokenRecorded(context.db, cliChangeSource(), serial, Date.now());
        printResult(
          options.json,
          toDeviceTokenRecord(issued),
          `serial: ${issued.serialNumber}\ntoken: ${issued.token}\n(the token is shown only this once; the device sends it as Authorization: Bearer <token>)`,
        );
      } finally {
        await context.close();
      }
    });
}
