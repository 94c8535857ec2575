import type { Command } from 'commander';
import { loadSettings, type Settings } from '../config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { loadMasterKey } from '../secrets/master-key.ts';

export interface CliContext {
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  masterKey: Buffer;
  close(): Promise<void>;
}

/** Settings, master key and a migrated database: what every command that touches data needs. */
export async function openContext(): Promise<CliContext> {
  const settings = loadSettings();
  const masterKey = loadMasterKey(settings);
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  return { settings, db, dialect, masterKey, close: () => db.destroy() };
}

/** Prints a command's result: one JSON object with --json, else readable lines. */
export function printResult(json: boolean | undefined, result: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${text}\n`);
}

/** `keyfleet customer …`, `keyfleet token …`: the group command, made by whichever file comes first. */
export function commandGroup(program: Command, name: string, description: string) {
  return program.commands.find((command) => command.name() === name) ?? program.command(name).description(description);
}

const DURATION = /^(\d+)([smhd])$/;
const SECONDS_PER_UNIT: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** An option's "30s", "15m", "1h" or "7d" → seconds. */
export function parseDuration(option: string, text: string): number {
  const match = DURATION.exec(text);
  const seconds = match ? Number(match[1]) * SECONDS_PER_UNIT[match[2]!]! : 0;
  if (seconds <= 0) throw new Error(`${option}: expected a positive duration such as 30s, 15m, 1h or 7d, got "${text}"`);
  return seconds;
}
