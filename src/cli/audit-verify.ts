import type { Command } from 'commander';
import { verifyAuditTrail } from '../audit/verification.ts';
import { commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'audit', 'verify and export the audit trail of changes')
    .command('verify')
    .description('walk the whole audit chain and its signed checkpoints; exit 1 naming the first entry altered, inserted, deleted or reordered, or a missing tail')
    .option('--json', 'print one JSON object')
    .action(async (options: { json?: boolean }) => {
      const context = await openContext();
      try {
        const startedAt = Date.now();
        const result = await verifyAuditTrail(context.db);
        const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
        const walked = `${result.entries} entries${result.first === null ? '' : ` (${result.first}–${result.last})`}, ${result.checkpoints} signed checkpoints${result.lastCheckpoint === null ? '' : ` (last at ${result.lastCheckpoint})`}${result.anchor === null ? '' : `, from the signed anchor ${result.anchor}`}${result.waiting === 0 ? '' : `, ${result.waiting} committed entries not chained yet`}, ${seconds} s`;
        const text = result.problem === undefined ? `intact: ${walked}` : `NOT INTACT: ${result.problem.kind} at entry ${result.problem.seq}: ${result.problem.detail}\nwalked ${walked}`;
        printResult(options.json, { ...result }, text);
        if (!result.intact) process.exitCode = 1;
      } finally {
        await context.close();
      }
    });
}
