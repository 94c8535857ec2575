import type { Command } from 'commander';
import { importRootCaRecorded } from '../pki/root-ca.ts';
import { readPemFile } from './cert-import.ts';
import { cliChangeSource, commandGroup, openContext, printResult } from './context.ts';

export function register(program: Command): void {
  commandGroup(program, 'cert', 'manage customer intermediate certificates')
    .command('import-root')
    .description('import the deployment root CA (only before the first start, which would create one)')
    .requiredOption('--cert <file>', 'PEM file: the self-signed ECDSA P-256 root certificate')
    .requiredOption('--key <file>', 'PEM file: its unencrypted private key (PKCS#8 or SEC1)')
    .option('--json', 'print one JSON object')
    .action(async (options: { cert: string; key: string; json?: boolean }) => {
      const certificateText = readPemFile('--cert', options.cert);
      const keyText = readPemFile('--key', options.key);
      const context = await openContext();
      try {
        const root = await importRootCaRecorded(context.db, context.keyRing, certificateText, keyText, cliChangeSource());
        printResult(options.json, { serial: root.serial, imported: true }, `root CA imported, serial: ${root.serial}`);
      } finally {
        await context.close();
      }
    });
}
