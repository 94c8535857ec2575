import type { Command } from 'commander';
import { loadSettings } from '../config/settings.ts';
import { dialectFor, openDatabase } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { createKeyRing } from '../key-ring.ts';
import { loadKeyRing } from '../secrets/load-key-ring.ts';
import { loadMasterKey } from '../secrets/master-key.ts';
import { printResult } from './context.ts';

export function register(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .option('--json', 'print one JSON object')
    .action(async (options: { json?: boolean }) => {
      const settings = loadSettings();
      const masterKey = loadMasterKey(settings);
      const { db, dialect } = openDatabase(dialectFor(settings));
      try {
        const result = await migrateToLatest(db, dialect);
        // Like every command, refuses a master key that is not the database's.
        await loadKeyRing(createKeyRing(db, masterKey), settings);
        const applied = (result.results ?? []).map((r) => r.migrationName);
        printResult(options.json, { applied }, applied.length ? `applied: ${applied.join(', ')}` : 'already up to date');
      } finally {
        await db.destroy();
      }
    });
}
