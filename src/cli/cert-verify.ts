import fs from 'node:fs';
import type { Command } from 'commander';
import { verifyKeyCertificate } from '../dlock/verify-certificate.ts';
import { UsageError, commandGroup, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('verify')
    .description('check a DLock key certificate (JSON or base64 form) against a PEM chain; exit 1 when it fails')
    .argument('<key-certificate>', 'file with the key certificate, or - for standard input')
    .requiredOption('--chain <file>', 'PEM chain: the intermediate, then the root (keyfleet cert export)')
    .option('--root <file>', 'PEM of the trusted root; the chain must end in it')
    .option('--at <epoch-seconds>', 'check validity at this time instead of now')
    .option('--json', 'print one JSON object')
    .action(async (file: string, options: { chain: string; root?: string; at?: string; json?: boolean }) => {
      const input = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
      if (options.at !== undefined && !/^\d+$/.test(options.at)) throw new UsageError(`--at: expected epoch seconds, got "${options.at}"`);
      const result = verifyKeyCertificate(input, fs.readFileSync(options.chain, 'utf8'), {
        ...(options.at === undefined ? {} : { now: Number(options.at) * 1000 }),
        ...(options.root === undefined ? {} : { trustedRootPem: fs.readFileSync(options.root, 'utf8') }),
      });
      if (result.ok) {
        const { serial_no, customer } = result.certificate.data;
        printResult(
          options.json,
          { valid: true, serial_no, customer, issuer: result.certificate.issuer, expires: result.certificate.expires },
          `valid: lock ${serial_no} of ${customer}, issued by ${result.certificate.issuer}, expires ${new Date(result.certificate.expires * 1000).toISOString()}`,
        );
        return;
      }
      printResult(options.json, { valid: false, failure: result.failure, reason: result.reason }, `invalid (${result.failure}): ${result.reason}`);
      process.exitCode = 1;
    });
}
