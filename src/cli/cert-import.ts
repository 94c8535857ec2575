import fs from 'node:fs';
import type { Command } from 'commander';
import { importIntermediateRecorded } from '../pki/intermediates.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

/** Reads a PEM file; the error names the option, never the file's content. */
export function readPemFile(option: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`${option}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

interface CertImportOptions {
  customer: string;
  name: string;
  cert: string;
  key: string;
  json?: boolean;
}

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('import')
    .description('import a customer intermediate certificate signed by the deployment root, with its private key')
    .requiredOption('--customer <name>', 'the customer that owns the certificate')
    .requiredOption('--name <cert>', 'certificate name, unique in the deployment: 1-64 characters of A-Z a-z 0-9 . _ -')
    .requiredOption('--cert <file>', 'PEM file: the intermediate certificate (optionally followed by the deployment root)')
    .requiredOption('--key <file>', 'PEM file: its unencrypted ECDSA P-256 private key (PKCS#8 or SEC1)')
    .option('--json', 'print one JSON object')
    .action(async (options: CertImportOptions) => {
      const certificateText = readPemFile('--cert', options.cert);
      const keyText = readPemFile('--key', options.key);
      const context = await openContext();
      try {
        const imported = await importIntermediateRecorded(
          context.db,
          context.keyRing,
          context.settings,
          { customer: options.customer, name: options.name, certificateText, keyText },
          cliChangeSource(),
        );
        const expires = new Date(imported.notAfter).toISOString();
        printResult(
          options.json,
          { id: imported.id, name: imported.name, customer: imported.customer, serial: imported.serial, not_after: expires },
          `name: ${imported.name}\ncustomer: ${imported.customer}\nserial: ${imported.serial}\nnot after: ${expires}`,
        );
      } finally {
        await context.close();
      }
    });
}
