import type { Command } from 'commander';
import { loadSettings, type Settings } from '../config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { migrateToLatest } from '../db/migrate.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { loadKeyRing } from '../secrets/load-key-ring.ts';
import { loadMasterKey } from '../secrets/master-key.ts';
import { parseDuration } from '../shared/duration.ts';

export interface CliContext {
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  keyRing: KeyRing;
  close(): Promise<void>;
}

/**
 * Settings, a migrated database and its key ring, verified against the master key (a wrong
 * key is refused here, naming the key the database expects): what every command that touches
 * data needs.
 */
export async function openContext(): Promise<CliContext> {
  const settings = loadSettings();
  const masterKey = loadMasterKey(settings);
  const { db, dialect } = openDatabase(dialectFor(settings));
  try {
    await migrateToLatest(db, dialect);
    const keyRing = await loadKeyRing(db, masterKey, settings);
    return { settings, db, dialect, keyRing, close: () => db.destroy() };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

/** Prints a command's result: one JSON object with --json, else readable lines. */
export function printResult(json: boolean | undefined, result: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${text}\n`);
}

/** `keyfleet customer …`, `keyfleet token …`: the group command, made by whichever file comes first. */
export function commandGroup(program: Command, name: string, description: string) {
  return program.commands.find((command) => command.name() === name) ?? program.command(name).description(description);
}

/** An option's duration ("0s", "30s", "15m", "1h", "7d", also "ms") in milliseconds, at least `minimumMs`. */
export function durationOption(option: string, text: string, minimumMs = 1): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < minimumMs) throw new Error(`${option}: expected a ${minimumMs > 0 ? 'positive ' : ''}duration such as 30s, 15m, 1h or 7d, got "${text}"`);
  return ms;
}
